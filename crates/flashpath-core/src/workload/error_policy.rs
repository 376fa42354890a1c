//! fio's error policy as a job states it (`continue_on_error`, `ignore_error`) and the
//! errno numbers the simulation produces; what the job thread does with them is
//! `sim/jobs/errors.rs` (td_error.c, backend.c `break_on_this_error`, fio 3.33).
//! Units: errno numbers.

/// EIO, EILSEQ and ENOTTY as Linux numbers them.
pub const EIO: i32 = 5;
pub const ENOTTY: i32 = 25;
pub const EILSEQ: i32 = 84;
/// EPERM: what a synchronous engine's -1 return is taken for (break_on_this_error).
pub const EPERM: i32 = 1;

/// fio's error types (enum error_type_bit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorType {
    Read = 0,
    Write = 1,
    Verify = 2,
}

impl ErrorType {
    /// td_error_type: EILSEQ is a verify error; otherwise a read's is a read error and
    /// any other direction's (write, trim) a write error.
    pub fn of(read: bool, errno: i32) -> ErrorType {
        if errno == EILSEQ {
            ErrorType::Verify
        } else if read {
            ErrorType::Read
        } else {
            ErrorType::Write
        }
    }
}

/// A job's `continue_on_error` bits and `ignore_error` lists.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorPolicy {
    /// Bit `ErrorType as u8` set: continue on errors of that type (fio's
    /// continue_on_error, with the bits ignore_error adds).
    pub continue_on: u8,
    /// Per type, the errnos ignore_error names (`None`: fio's EIO, EILSEQ).
    pub ignore: [Option<Vec<i32>>; 3],
}

/// What the job does after an error at queue time (break_on_this_error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnError {
    /// Not fatal: counted, the job goes on.
    Continue,
    /// The job ends; `counted`: the error is counted (update_error_count).
    Stop { counted: bool },
}

impl ErrorPolicy {
    /// Whether continue_on_error is set at all (fio then prints the error count).
    pub fn any(&self) -> bool {
        self.continue_on != 0
    }

    /// td_non_fatal_error.
    pub fn non_fatal(&self, t: ErrorType, errno: i32) -> bool {
        if self.continue_on & (1 << t as u8) == 0 {
            return false;
        }
        match &self.ignore[t as usize] {
            Some(list) => list.contains(&errno),
            None => errno == EIO || errno == EILSEQ,
        }
    }

    /// break_on_this_error for an error `errno` of an I/O (`read`: its direction).
    pub fn on_queue_error(&self, read: bool, errno: i32) -> OnError {
        let t = ErrorType::of(read, errno);
        if self.continue_on & (1 << t as u8) == 0 {
            OnError::Stop { counted: false }
        } else if self.non_fatal(t, errno) {
            OnError::Continue
        } else {
            OnError::Stop { counted: true }
        }
    }
}

/// A job's error count (update_error_count) and what fio's report shows of it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorCount {
    /// fio's total_err_count.
    pub total: u64,
    /// fio's first_error (0: none).
    pub first: i32,
}

impl ErrorCount {
    pub fn add(&mut self, errno: i32) {
        self.total += 1;
        if self.total == 1 {
            self.first = errno;
        }
    }
}
