//! Job files, command line, typed options (owned by the parser work).
