//! Output formats from a typed result model (owned by the report work).
