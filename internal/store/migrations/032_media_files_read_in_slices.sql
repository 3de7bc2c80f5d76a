-- GET /media/{id}/{name} reads a file a slice at a time (decision 0167).
-- A compressed value is decompressed from its start for every slice, so a
-- file's slices cost the square of its size; stored uncompressed, each
-- slice reads only its own TOAST chunks. The uploads allowed are images,
-- PDFs and plain text: the first two do not compress, and plain text is
-- a small share. Rows stored before keep their form and read correctly.
ALTER TABLE media_files ALTER COLUMN content SET STORAGE EXTERNAL;
