"""The run directory: its one writer and one reader, line digests, the lock, repair before a resume, the
summary's statistics and speed, the sweep summary, which model answered which answers."""
