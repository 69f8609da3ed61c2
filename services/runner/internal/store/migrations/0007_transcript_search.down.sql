DROP INDEX IF EXISTS transcript_lines_text_search;
