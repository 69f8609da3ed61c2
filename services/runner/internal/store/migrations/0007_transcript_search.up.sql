-- The dashboard's "transcript contents" search (lifecycle's ListSessions
-- transcript filter, through SearchTranscripts): full-text over each line's
-- text with the 'simple' configuration (no stemming, no stop words: an agent's
-- transcript is code and logs as much as English). The GIN index answers a
-- phrase query from its posting lists, so a search never reads every line.
CREATE INDEX transcript_lines_text_search ON transcript_lines USING gin (to_tsvector('simple'::regconfig, text));
