-- ListAlerts: the most recently opened alerts first.
CREATE INDEX alerts_newest_first ON alerts (first_seen_at DESC, id DESC);
