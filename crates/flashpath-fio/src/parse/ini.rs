//! The job-file reader (fio's `__parse_jobs_ini`) and the state shared with the
//! command line: the default option set that global sections edit, option parsing
//! of a section (`fio_options_parse`), and `add_job` (clones, groups).

use std::path::{Path, PathBuf};

use super::expand::{env_subst, keyword_replace};
use super::options::{self, JobOptions};
use super::table::{self, OptDef};
use super::value;
use super::{Env, ErrorKind, Job, Origin, ParseError, SetOption};

/// fio's `FIO_MAX_JOBS` (default `--max-jobs`).
pub const MAX_JOBS: usize = 4096;
/// fgets buffer of the job-file reader (OPT_LEN_MAX).
const LINE_MAX: usize = 8191;
const MAX_INCLUDE_DEPTH: usize = 32;

/// An option line of a section, before expansion.
#[derive(Debug, Clone)]
pub struct RawOpt {
    pub text: String,
    pub origin: Origin,
}

/// A job's option set while it is being built (fio's `thread_data.o` + `opt_list`).
#[derive(Debug, Clone, Default)]
pub struct JobState {
    pub options: JobOptions,
    pub set: Vec<SetOption>,
}

impl JobState {
    /// A copy for a new job: everything so far is inherited.
    pub fn inherit(&self) -> JobState {
        let mut s = self.clone();
        for o in &mut s.set {
            o.inherited = true;
        }
        s
    }
}

pub struct Output {
    pub jobs: Vec<Job>,
    pub warnings: Vec<String>,
    pub global_options: Vec<SetOption>,
}

pub struct Builder<'e> {
    pub env: &'e Env,
    /// fio's `def_thread`: what global sections edit and jobs copy.
    pub def: JobState,
    pub jobs: Vec<Job>,
    pub warnings: Vec<String>,
    pub sections: Vec<String>,
    /// `--readonly` seen: fio's `rw` check refuses modes that write or trim.
    pub readonly: bool,
    prev_group_jobs: u32,
    group_id: u32,
    include_stack: Vec<PathBuf>,
}

/// `is_empty_or_comment`.
fn empty_or_comment(line: &str) -> bool {
    for c in line.bytes() {
        if c == b';' || c == b'#' {
            return true;
        }
        if !value::is_c_space(c) && !c.is_ascii_control() {
            return false;
        }
    }
    true
}

/// `strip_blank_front`.
fn strip_front(s: &str) -> &str {
    s.trim_start_matches(|c: char| c.is_ascii() && value::is_c_space(c as u8))
}

/// `strip_blank_end`: cut an inline `;` or `#` comment, then trailing blanks and
/// control characters.
pub fn strip_end(s: &str) -> &str {
    let mut s = s;
    if let Some(p) = s.find(';') {
        s = &s[..p];
    }
    if let Some(p) = s.find('#') {
        s = &s[..p];
    }
    let t = s.trim_end_matches(|c: char| {
        c.is_ascii() && (value::is_c_space(c as u8) || c.is_ascii_control())
    });
    // fio never removes the first character.
    if t.is_empty() && !s.is_empty() {
        &s[..s.chars().next().map_or(0, char::len_utf8)]
    } else {
        t
    }
}

/// Lines as fgets returns them: split at '\n', cut at a NUL, long lines in chunks.
fn read_lines(bytes: &[u8]) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let line_no = (i + 1) as u32;
        let mut chunks = raw.chunks(LINE_MAX).peekable();
        if chunks.peek().is_none() {
            out.push((String::new(), line_no));
        }
        for chunk in chunks {
            let chunk = match chunk.iter().position(|&b| b == 0) {
                Some(p) => &chunk[..p],
                None => chunk,
            };
            out.push((String::from_utf8_lossy(chunk).into_owned(), line_no));
        }
    }
    // A trailing newline does not start another line.
    if bytes.last() == Some(&b'\n') {
        out.pop();
    }
    out
}

/// Splits `name=value` as fio's `get_option` does (name's trailing blanks removed,
/// value kept as is).
pub fn split_opt(s: &str) -> (&str, Option<&str>) {
    match s.find('=') {
        Some(p) => (strip_end(&s[..p]), Some(&s[p + 1..])),
        None => (s, None),
    }
}

fn prio_of(text: &str) -> i32 {
    let (name, _) = split_opt(text);
    table::find_core(name).map_or(0, |d| d.prio)
}

fn file_error(path: &Path, line: u32) -> Origin {
    Origin::File {
        path: path.to_path_buf(),
        line,
    }
}

impl<'e> Builder<'e> {
    pub fn new(env: &'e Env, sections: Vec<String>) -> Self {
        Builder {
            env,
            def: JobState::default(),
            jobs: Vec::new(),
            warnings: Vec::new(),
            sections,
            readonly: false,
            prev_group_jobs: 0,
            group_id: 0,
            include_stack: Vec::new(),
        }
    }

    pub fn finish(self) -> Output {
        Output {
            global_options: self.def.set.clone(),
            jobs: self.jobs,
            warnings: self.warnings,
        }
    }

    fn skip_section(&self, name: &str) -> bool {
        !self.sections.is_empty()
            && !name.starts_with("global")
            && !self.sections.iter().any(|s| s == name)
    }

    /// Reads a job file, at most [`JOB_FILE_LIMIT`] bytes (`-` is not supported: callers pass stdin's text to
    /// [`Builder::parse_file_text`]).
    pub fn parse_file(&mut self, path: &Path, file_index: usize) -> Result<(), ParseError> {
        let full = self.env.resolve(path);
        let bytes = read_job_file(&full).map_err(|e| {
            let why = match e {
                JobFileError::Io(e) => e.to_string(),
                JobFileError::TooLarge => too_large(),
            };
            ParseError::new(
                ErrorKind::Io,
                None,
                format!("fio: unable to open '{}' job file: {why}", path.display()),
            )
        })?;
        self.parse_file_text(&bytes, path, file_index)
    }

    pub fn parse_file_text(
        &mut self,
        bytes: &[u8],
        path: &Path,
        file_index: usize,
    ) -> Result<(), ParseError> {
        if file_index > 0 {
            // Every later job file starts again from built-in defaults.
            self.def = JobState::default();
        }
        let mut stonewall_pending = file_index > 0;
        let lines = read_lines(bytes);
        let mut idx = 0usize;
        let mut pending: Option<(String, u32)> = None;
        let mut inside_skip = false;
        loop {
            let (line, ln) = match pending.take() {
                Some(x) => x,
                None => match lines.get(idx) {
                    Some(x) => {
                        idx += 1;
                        x.clone()
                    }
                    None => break,
                },
            };
            let p = strip_end(strip_front(&line));
            if empty_or_comment(p) {
                continue;
            }
            if !p.starts_with('[') || p.len() < 2 {
                if inside_skip {
                    continue;
                }
                return Err(ParseError::new(
                    ErrorKind::Syntax,
                    Some(file_error(path, ln)),
                    format!("fio: option <{p}> outside of [] job section"),
                ));
            }
            // sscanf("[%255[^\n]]"): up to 255 bytes after '[', then the last
            // character (normally ']') is dropped.
            let mut name = value::truncate_bytes(&p[1..], 255).to_string();
            name.pop();
            if self.skip_section(&name) {
                inside_skip = true;
                continue;
            }
            inside_skip = false;
            let global = name.starts_with("global");

            let mut opts: Vec<RawOpt> = Vec::new();
            while let Some((raw, ln2)) = lines.get(idx).cloned() {
                idx += 1;
                if empty_or_comment(&raw) {
                    continue;
                }
                let p = strip_front(&raw);
                if p.starts_with('[') {
                    pending = Some((p.to_string(), ln2));
                    break;
                }
                let p = strip_end(p);
                if p.starts_with("include") {
                    self.include(p, path, ln2, &mut opts)?;
                    continue;
                }
                opts.push(RawOpt {
                    text: p.to_string(),
                    origin: file_error(path, ln2),
                });
            }

            if global {
                let mut def = std::mem::take(&mut self.def);
                let r = self.parse_options(&mut def, &opts, true);
                self.def = def;
                r?;
            } else {
                let mut st = self.def.inherit();
                // A job is named after its section: a `name=` inherited from a global
                // section does not rename it (measured: JSON jobname), its own does.
                st.options.name = None;
                if stonewall_pending {
                    st.options.stonewall = true;
                    stonewall_pending = false;
                }
                self.parse_options(&mut st, &opts, false)?;
                let origin = file_error(path, ln);
                self.add_job(st, &name, Some(file_index), origin)?;
            }
        }
        Ok(())
    }

    /// `include <file>`: its option lines join the current section.
    fn include(
        &mut self,
        p: &str,
        including: &Path,
        line: u32,
        opts: &mut Vec<RawOpt>,
    ) -> Result<(), ParseError> {
        let origin = file_error(including, line);
        // fio skips "include" and one more character (the blank or '=').
        let filename = p.get(8..).unwrap_or("");
        let mut chosen = PathBuf::from(filename);
        if !self.env.resolve(&chosen).exists() {
            let inc = including.to_string_lossy();
            if let Some(pos) = inc.rfind('/') {
                chosen = PathBuf::from(format!("{}{}", &inc[..=pos], filename));
            }
        }
        let full = self.env.resolve(&chosen);
        let canon = std::fs::canonicalize(&full).unwrap_or_else(|_| full.clone());
        if self.include_stack.contains(&canon) || self.include_stack.len() >= MAX_INCLUDE_DEPTH {
            return Err(ParseError::new(
                ErrorKind::IncludeLoop,
                Some(origin),
                format!("include loop: '{}' includes itself", chosen.display()),
            ));
        }
        let bytes = read_job_file(&full).map_err(|e| match e {
            JobFileError::TooLarge => ParseError::new(
                ErrorKind::Io,
                Some(origin.clone()),
                format!("include file '{filename}': {}", too_large()),
            ),
            JobFileError::Io(_) => ParseError::new(
                ErrorKind::Io,
                Some(origin.clone()),
                format!(
                    "fio: unable to open '{filename}' job file; Error 1 while parsing include file {filename}"
                ),
            ),
        })?;
        self.include_stack.push(canon);
        let r = self.include_lines(&bytes, &chosen, opts);
        self.include_stack.pop();
        r
    }

    fn include_lines(
        &mut self,
        bytes: &[u8],
        path: &Path,
        opts: &mut Vec<RawOpt>,
    ) -> Result<(), ParseError> {
        for (raw, ln) in read_lines(bytes) {
            if empty_or_comment(&raw) {
                continue;
            }
            let p = strip_front(&raw);
            if p.starts_with('[') {
                return Err(ParseError::new(
                    ErrorKind::Syntax,
                    Some(file_error(path, ln)),
                    "No new sections in included files",
                ));
            }
            let p = strip_end(p);
            if p.starts_with("include") {
                self.include(p, path, ln, opts)?;
                continue;
            }
            opts.push(RawOpt {
                text: p.to_string(),
                origin: file_error(path, ln),
            });
        }
        Ok(())
    }

    /// `fio_options_parse` for a job-file section: sort by priority, expand `${}` and
    /// keywords, parse core options, then engine options once the engine is known.
    pub fn parse_options(
        &mut self,
        st: &mut JobState,
        opts: &[RawOpt],
        global: bool,
    ) -> Result<(), ParseError> {
        let mut order: Vec<usize> = (0..opts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(prio_of(&opts[i].text)));
        let mut unknown: Vec<(String, usize)> = Vec::new();
        let mut first_err: Option<ParseError> = None;
        for &i in &order {
            let raw = &opts[i];
            let expanded = match keyword_replace(&env_subst(&raw.text, self.env), self.env) {
                Ok(s) => s,
                Err(e) => {
                    first_err.get_or_insert(ParseError::new(
                        ErrorKind::BadValue,
                        Some(raw.origin.clone()),
                        format!("fio: failed parsing {} ({e})", raw.text),
                    ));
                    continue;
                }
            };
            let (name, value) = split_opt(&expanded);
            match table::find_core(name) {
                Some(def) => {
                    if let Err(e) =
                        self.apply_def(st, def, value, &raw.origin, &raw.text, global, None)
                    {
                        first_err.get_or_insert(e);
                    }
                }
                None => unknown.push((expanded.clone(), i)),
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        if unknown.is_empty() {
            return Ok(());
        }
        let engine = st.options.ioengine.as_fio().to_string();
        let loadable = table::engine_builtin(&engine);
        for (expanded, i) in unknown {
            let origin = &opts[i].origin;
            let (name, value) = split_opt(&expanded);
            let def = if loadable {
                table::find_engine(&engine, name)
            } else {
                None
            };
            match def {
                Some(def) => {
                    self.apply_def(st, def, value, origin, &opts[i].text, global, Some(&engine))?
                }
                None => {
                    let mut msg = String::new();
                    if !loadable {
                        msg.push_str(&format!("fio: engine {engine} not loadable; "));
                    }
                    msg.push_str(&format!("Bad option <{expanded}>"));
                    if let Some(c) = table::closest_option(name) {
                        msg.push_str(&format!(" (did you mean {c}?)"));
                    }
                    return Err(ParseError::new(
                        if loadable {
                            ErrorKind::UnknownOption
                        } else {
                            ErrorKind::Engine
                        },
                        Some(origin.clone()),
                        msg,
                    ));
                }
            }
        }
        Ok(())
    }

    /// Converts, checks and records one option (`handle_option` + callbacks).
    #[allow(clippy::too_many_arguments)]
    pub fn apply_def(
        &mut self,
        st: &mut JobState,
        def: &OptDef,
        value: Option<&str>,
        origin: &Origin,
        input: &str,
        global: bool,
        engine: Option<&str>,
    ) -> Result<(), ParseError> {
        let kb = u64::from(st.options.kb_base);
        let fail = |msg: String| {
            let m = if msg.is_empty() {
                format!("fio: failed parsing {input}")
            } else {
                format!("fio: failed parsing {input} ({msg})")
            };
            ParseError::new(ErrorKind::BadValue, Some(origin.clone()), m)
        };
        let conv = value::convert(def, value, kb).map_err(|m| {
            if m.is_empty() && !def.posvals.is_empty() && value.is_some() {
                fail(format!("valid values: {}", def.posvals.join(", ")))
            } else {
                fail(m)
            }
        })?;
        for w in &conv.warnings {
            self.warnings.push(format!("{origin}: {w}"));
        }
        // fio does not left-trim values: `size = 1m` is one byte. Accept like fio,
        // but say so.
        if let Some(v) = value.filter(|v| v.starts_with([' ', '\t'])) {
            self.warnings.push(format!(
                "{origin}: value of '{}' starts with a blank; fio reads '{v}' as written",
                def.name
            ));
        }
        options::apply(&mut st.options, def, value, &conv).map_err(fail)?;
        if self.readonly && def.name == "rw" {
            let m = st.options.rw.mode;
            if m.writes() || m.trims() {
                let name = st.options.name.as_deref().unwrap_or("(null)");
                return Err(fail(format!(
                    "fio: job <{name}> has write or trim bit set, but fio is in read-only mode"
                )));
            }
        }
        st.set.push(SetOption {
            name: def.name.clone(),
            value: value.map(str::to_string),
            origin: origin.clone(),
            inherited: global,
            engine: engine.map(str::to_string),
        });
        Ok(())
    }

    /// fio's `add_job`: reporting group, thread number, numjobs clones.
    pub fn add_job(
        &mut self,
        st: JobState,
        section: &str,
        file_index: Option<usize>,
        origin: Origin,
    ) -> Result<(), ParseError> {
        let o = &st.options;
        // fio refuses all three with "error: maximum number of jobs reached."; the
        // line says which way this job got there.
        let why = if o.numjobs == 0 {
            // add_job clones numjobs - 1 times, unsigned: 0 wraps to 2^32 - 1 clones.
            Some(
                "numjobs=0: fio clones the job numjobs - 1 times, which wraps around to 4294967295"
                    .to_string(),
            )
        } else if self.jobs.len() + o.numjobs as usize > MAX_JOBS {
            Some(if o.numjobs == 1 {
                format!(
                    "job {} ('{section}') is one more than fio runs",
                    self.jobs.len() + 1
                )
            } else {
                format!(
                    "job '{section}' with numjobs={} would make {}",
                    o.numjobs,
                    self.jobs.len() + o.numjobs as usize
                )
            })
        } else {
            None
        };
        if let Some(why) = why {
            return Err(ParseError::new(
                ErrorKind::BadValue,
                Some(origin),
                format!("error: maximum number of jobs ({MAX_JOBS}) reached: {why}"),
            ));
        }
        if (o.stonewall || o.new_group) && self.prev_group_jobs > 0 {
            self.prev_group_jobs = 0;
            self.group_id += 1;
        }
        let name = o.name.clone().unwrap_or_else(|| section.to_string());
        let numjobs = o.numjobs;
        let job = Job {
            name: name.clone(),
            section: section.to_string(),
            thread_number: self.jobs.len() as u32 + 1,
            clone_index: 0,
            group_id: self.group_id,
            wait_for: o.wait_for.clone(),
            stonewall: o.stonewall,
            options: st.options.clone(),
            set_options: st.set.clone(),
            file_index,
        };
        self.jobs.push(job);
        self.prev_group_jobs += 1;
        // fio adds clones counting down: thread order is subjob 0, N-1, N-2, ..., 1
        // (measured: numjobs=3 offset_increment=1m gives threads offsets 0, 2m, 1m).
        for k in (1..numjobs).rev() {
            let mut c = st.options.clone();
            c.numjobs = 1;
            c.stonewall = false;
            c.new_group = false;
            self.jobs.push(Job {
                name: name.clone(),
                section: section.to_string(),
                thread_number: self.jobs.len() as u32 + 1,
                clone_index: k,
                group_id: self.group_id,
                wait_for: c.wait_for.clone(),
                stonewall: false,
                options: c,
                set_options: st.set.clone(),
                file_index,
            });
            self.prev_group_jobs += 1;
        }
        Ok(())
    }
}

/// The most a job file (or an included one, or standard input's) may hold. fio reads a
/// job file a line at a time into fixed buffers, so `/dev/zero` as a job file never
/// makes it grow; flashpath reads a file whole, so it stops at a size no job file
/// reaches (the largest of fio's examples is under 8 KiB) and refuses the rest.
pub const JOB_FILE_LIMIT: u64 = 16 << 20;

pub(crate) enum JobFileError {
    Io(std::io::Error),
    TooLarge,
}

/// The error text of a job file past [`JOB_FILE_LIMIT`].
pub fn too_large() -> String {
    format!(
        "larger than {} MiB, the most flashpath reads of a job file (is it one?)",
        JOB_FILE_LIMIT >> 20
    )
}

/// Reads at most [`JOB_FILE_LIMIT`] bytes of `r`; more is an error, found after reading
/// one byte past the limit (a device without end costs that and no more).
pub fn read_bounded(r: impl std::io::Read) -> Result<Vec<u8>, Option<std::io::Error>> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    r.take(JOB_FILE_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(Some)?;
    if bytes.len() as u64 > JOB_FILE_LIMIT {
        return Err(None);
    }
    Ok(bytes)
}

fn read_job_file(path: &Path) -> Result<Vec<u8>, JobFileError> {
    let f = std::fs::File::open(path).map_err(JobFileError::Io)?;
    read_bounded(f).map_err(|e| match e {
        Some(e) => JobFileError::Io(e),
        None => JobFileError::TooLarge,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_blanks() {
        // [V] inline comments cut at the first ; or #, trailing blanks trimmed.
        assert_eq!(strip_end("size=102404k ; 100Mb+4k"), "size=102404k");
        assert_eq!(
            strip_end("numjobs=4\t; 4 simultaneous threads"),
            "numjobs=4"
        );
        assert_eq!(
            strip_end("create_serialize=0 # (required)"),
            "create_serialize=0"
        );
        assert!(empty_or_comment("   # x"));
        assert!(empty_or_comment("\t; x"));
        assert!(empty_or_comment("  \r"));
        assert!(!empty_or_comment(" bs=4k"));
        assert_eq!(split_opt("size = 1m"), ("size", Some(" 1m")));
        assert_eq!(split_opt("stonewall"), ("stonewall", None));
    }

    #[test]
    fn fgets_lines() {
        let l = read_lines(b"a\nb\x00c\n\nd");
        assert_eq!(
            l,
            vec![
                ("a".to_string(), 1),
                ("b".to_string(), 2),
                (String::new(), 3),
                ("d".to_string(), 4)
            ]
        );
    }
}
