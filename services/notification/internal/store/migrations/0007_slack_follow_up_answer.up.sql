-- What the queue answered an event's follow-up (delivered now, or queued
-- behind the running turn), kept with the step: the thread is told it, and
-- a retried activity tells the same rather than asking the queue again
-- (which by then may answer for a session archived since). Empty for a
-- follow-up done before this column, whose thread is told nothing.
ALTER TABLE slack_events ADD COLUMN follow_up_answer text NOT NULL DEFAULT '';
