-- The settings a person changes from any host's web board (the recycler's
-- keys and the summarizer), shared by every host: each host's config.toml
-- gives the rest, and these override its [recycler] and
-- [models.summarizer] keys they name.
CREATE TABLE fleet_settings (
    name    text PRIMARY KEY,
    body    jsonb NOT NULL,
    updated timestamptz NOT NULL
);
