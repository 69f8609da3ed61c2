DROP TABLE transcript_lines;
DROP TABLE transcript_turns;
