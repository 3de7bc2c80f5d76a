-- A page's reading waits for the memory it will hold in the worker's
-- budget before it loads the image (decision 0174): the bytes that
-- decoding and reading the image hold at most, taken from its header when
-- the page is split. Pages split before this migration have none and are
-- read alone.
ALTER TABLE answer_sheet_scan_pages ADD COLUMN read_memory bigint;
