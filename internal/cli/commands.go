package cli

import "github.com/spf13/cobra"

// extraCommands lists the commands beyond init, one per line so that
// parallel work adds lines without conflicts.
func extraCommands(d *deps) []*cobra.Command {
	return []*cobra.Command{
		newIndexCmd(d, nil),
		newRetrieveCmd(d, nil),
		newQueryCmd(d),
		newLogCmd(d),
		newEnrichCmd(d, nil),
		newDoctorCmd(d, nil),
		newPlanCmd(d, nil),
		newSolveCmd(d, nil),
		newTaskCmd(d),
		newSuperviseCmd(d, nil),
		newServeCmd(d, nil),
		newRecycleCmd(d, nil),
		newAnswerCmd(d, nil),
		newCleanCmd(d, nil),
		newCleanupCmd(d, nil),
		newKnowledgeCmd(d),
		newSupervisorsCmd(d),
		newBootstrapCmd(d, nil),
		newTrainPlanCmd(d, nil),
		newCurateDataCmd(d, nil),
		newTrainCmd(d, nil),
		newAdaptersCmd(d),
		newTuneCmd(d, nil),
		newSandboxExecCmd(d),
		newMCPCmd(d, nil),
		newFleetCmd(d),
	}
}
