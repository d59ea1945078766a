//! Small real clients of rgex; see `src/bin/`.
