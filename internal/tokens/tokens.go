// Package tokens estimates how many tokens a text costs a model, before
// the model server counts them: the one estimate every budget in cra
// (retrieval's packages, prompts, injected knowledge, training pairs)
// uses, so that they agree.
package tokens

// Estimate approximates a text's token count as chars/4, rounded up
// (seed 001 §7.3); exact counts come from the model server afterwards.
func Estimate(s string) int {
	return (len(s) + 3) / 4
}
