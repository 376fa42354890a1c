//! fio's command line (`parse_cmd_line` in init.c) with glibc `getopt_long_only`
//! rules: `-opt` and `--opt` alike, unique abbreviations, `--opt value` for options
//! that require a value, non-options (job files) anywhere.
//!
//! `--name=X` starts job X; options before the first `--name` (or after
//! `--name=global`) edit the defaults, which also reach the first job file. Engine
//! options are known only after `--ioengine=` selected their engine.

use std::path::PathBuf;

use super::ini::{Builder, JobState};
use super::table::{self, OptDef};
use super::{Env, ErrorKind, Invocation, Origin, OutputFormat, ParseError};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum HasArg {
    No,
    Required,
    Optional,
}

/// fio's own switches (`l_opts` of init.c), in the order fio's abbreviation
/// messages list them.
const FIO_SWITCHES: &[(&str, HasArg)] = &[
    ("append-terse", HasArg::Optional),
    ("alloc-size", HasArg::Required),
    ("aux-path", HasArg::Required),
    ("bandwidth-log", HasArg::No),
    ("cmdhelp", HasArg::Optional),
    ("client", HasArg::Required),
    ("cpuclock-test", HasArg::No),
    ("crctest", HasArg::Optional),
    ("debug", HasArg::Required),
    ("daemonize", HasArg::Required),
    ("enghelp", HasArg::Optional),
    ("eta", HasArg::Required),
    ("eta-interval", HasArg::Required),
    ("eta-newline", HasArg::Required),
    ("help", HasArg::No),
    ("inflate-log", HasArg::Required),
    ("idle-prof", HasArg::Required),
    ("latency-log", HasArg::Required),
    ("minimal", HasArg::No),
    ("max-jobs", HasArg::Required),
    ("memcpytest", HasArg::Optional),
    ("merge-blktrace-only", HasArg::No),
    ("output", HasArg::Required),
    ("output-format", HasArg::Required),
    ("parse-only", HasArg::No),
    ("profile", HasArg::Required),
    ("readonly", HasArg::No),
    ("remote-config", HasArg::Required),
    ("showcmd", HasArg::No),
    ("section", HasArg::Required),
    ("server", HasArg::Optional),
    ("status-interval", HasArg::Required),
    ("terse-version", HasArg::Required),
    ("trigger-file", HasArg::Required),
    ("trigger-timeout", HasArg::Required),
    ("trigger", HasArg::Required),
    ("trigger-remote", HasArg::Required),
    ("version", HasArg::No),
    ("warnings-fatal", HasArg::No),
];

/// fio's short options (getopt's optstring) and the long switch each stands for.
const SHORT: &[(char, &str)] = &[
    ('a', "alloc-size"),
    ('b', "bandwidth-log"),
    ('c', "cmdhelp"),
    ('d', "debug"),
    ('e', "eta"),
    ('f', "append-terse"),
    ('h', "help"),
    ('i', "enghelp"),
    ('j', "max-jobs"),
    ('l', "latency-log"),
    ('m', "minimal"),
    ('o', "output"),
    ('p', "profile"),
    ('r', "readonly"),
    ('s', "showcmd"),
    ('v', "version"),
    ('w', "warnings-fatal"),
    ('x', "section"),
    ('A', "merge-blktrace-only"),
    ('B', "trigger-timeout"),
    ('C', "client"),
    ('D', "daemonize"),
    ('E', "eta-newline"),
    ('F', "output-format"),
    ('G', "crctest"),
    ('H', "trigger"),
    ('I', "idle-prof"),
    ('J', "trigger-remote"),
    ('K', "aux-path"),
    ('L', "status-interval"),
    ('M', "memcpytest"),
    ('O', "eta-interval"),
    ('P', "parse-only"),
    ('R', "remote-config"),
    ('S', "server"),
    ('T', "cpuclock-test"),
    ('V', "terse-version"),
    ('W', "trigger-file"),
    ('X', "inflate-log"),
];

fn short_switch(c: char) -> Option<LongOpt> {
    let (_, long) = SHORT.iter().find(|(s, _)| *s == c)?;
    let k = FIO_SWITCHES.iter().position(|(n, _)| n == long)?;
    Some(LongOpt {
        name: FIO_SWITCHES[k].0,
        has_arg: FIO_SWITCHES[k].1,
        target: Target::Switch(k),
    })
}

/// glibc `getopt_long_only` for one argv element: the options it stands for, with
/// their values (a value may consume the next element).
fn resolve(
    a: &str,
    args: &[String],
    i: &mut usize,
    index: usize,
    opts: &[LongOpt],
) -> Result<Vec<(LongOpt, Option<String>)>, ParseError> {
    let double = a.starts_with("--");
    let body = if double { &a[2..] } else { &a[1..] };
    let first = body.chars().next();
    let is_short = |c: Option<char>| c.is_some_and(|c| SHORT.iter().any(|(s, _)| *s == c));
    // "-f" where f is a short option is never read as an abbreviation.
    let try_long = double || body.chars().nth(1).is_some() || !is_short(first);
    if try_long {
        let (name, inline_val) = match body.find('=') {
            Some(p) => (&body[..p], Some(&body[p + 1..])),
            None => (body, None),
        };
        let found: Option<LongOpt> = match opts.iter().find(|o| o.name == name) {
            Some(o) => Some(*o),
            None if name.is_empty() => None,
            None => {
                let cands: Vec<&LongOpt> =
                    opts.iter().filter(|o| o.name.starts_with(name)).collect();
                // With getopt_long_only any second prefix match is ambiguous.
                if cands.len() > 1 {
                    let dash = if double { "--" } else { "-" };
                    let list: Vec<String> = cands
                        .iter()
                        .map(|c| format!("'{dash}{}'", c.name))
                        .collect();
                    return Err(usage(
                        index,
                        format!(
                            "fio: option '{a}' is ambiguous; possibilities: {}",
                            list.join(" ")
                        ),
                    ));
                }
                cands.first().copied().copied()
            }
        };
        match found {
            Some(lo) => {
                let val = match lo.has_arg {
                    HasArg::No => {
                        if inline_val.is_some() {
                            return Err(usage(
                                index,
                                format!("fio: option '--{}' doesn't allow an argument", lo.name),
                            ));
                        }
                        None
                    }
                    HasArg::Optional => inline_val.map(str::to_string),
                    HasArg::Required => match inline_val {
                        Some(v) => Some(v.to_string()),
                        None => match args.get(*i) {
                            Some(next) => {
                                *i += 1;
                                Some(next.clone())
                            }
                            None => {
                                return Err(usage(
                                    index,
                                    format!("fio: option '{a}' requires an argument"),
                                ))
                            }
                        },
                    },
                };
                return Ok(vec![(lo, val)]);
            }
            None if double || !is_short(first) => {
                let mut msg = format!("fio: unrecognized option '{a}'");
                if let Some(c) = table::closest_option(a.trim_start_matches('-')) {
                    msg.push_str(&format!(" (did you mean {c}?)"));
                }
                return Err(ParseError::new(
                    ErrorKind::UnknownOption,
                    Some(Origin::Arg { index }),
                    msg,
                ));
            }
            None => {}
        }
    }
    // Short options, possibly clustered ("-bm"), the last may take a value.
    let mut out = Vec::new();
    let chars: Vec<char> = body.chars().collect();
    let mut k = 0;
    while k < chars.len() {
        let c = chars[k];
        let Some(lo) = short_switch(c) else {
            return Err(ParseError::new(
                ErrorKind::UnknownOption,
                Some(Origin::Arg { index }),
                format!("fio: invalid option -- '{c}'"),
            ));
        };
        k += 1;
        let rest: String = chars[k..].iter().collect();
        match lo.has_arg {
            HasArg::No => out.push((lo, None)),
            HasArg::Optional => {
                out.push((lo, if rest.is_empty() { None } else { Some(rest) }));
                break;
            }
            HasArg::Required => {
                let v = if !rest.is_empty() {
                    rest
                } else if let Some(next) = args.get(*i) {
                    *i += 1;
                    next.clone()
                } else {
                    return Err(usage(
                        index,
                        format!("fio: option requires an argument -- '{c}'"),
                    ));
                };
                out.push((lo, Some(v)));
                break;
            }
        }
    }
    Ok(out)
}

#[derive(Clone, Copy)]
enum Target {
    Switch(usize),
    Job(&'static OptDef),
    Engine(&'static OptDef),
}

#[derive(Clone, Copy)]
struct LongOpt {
    name: &'static str,
    has_arg: HasArg,
    target: Target,
}

fn has_arg_of(def: &OptDef) -> HasArg {
    if def.ty.value_optional() {
        HasArg::Optional
    } else {
        HasArg::Required
    }
}

fn long_opts(engine: Option<&str>) -> Vec<LongOpt> {
    let mut v: Vec<LongOpt> = FIO_SWITCHES
        .iter()
        .enumerate()
        .map(|(i, (n, h))| LongOpt {
            name: n,
            has_arg: *h,
            target: Target::Switch(i),
        })
        .collect();
    for (n, def) in table::core_long_names() {
        v.push(LongOpt {
            name: n,
            has_arg: has_arg_of(def),
            target: Target::Job(def),
        });
    }
    if let Some(e) = engine {
        for (n, def) in table::engine_long_names(e) {
            v.push(LongOpt {
                name: n,
                has_arg: has_arg_of(def),
                target: Target::Engine(def),
            });
        }
    }
    v
}

struct JobCtx {
    state: JobState,
    section: String,
    origin: Origin,
}

/// The job being built: none yet, the defaults (global), or a job.
enum Td {
    None,
    Global,
    Job(Box<JobCtx>),
}

/// Whether a `--` comes before argument `index` (1-based): after it every argument
/// is a job file by intent.
fn only_files_before(args: &[String], index: usize) -> bool {
    args[..index - 1].iter().any(|a| a == "--")
}

fn usage(index: usize, msg: String) -> ParseError {
    ParseError::new(ErrorKind::Usage, Some(Origin::Arg { index }), msg)
}

fn parse_formats(v: &str) -> Result<Vec<OutputFormat>, String> {
    let (mut normal, mut terse, mut json, mut plus) = (false, false, false, false);
    for f in v.split(',') {
        match f {
            "minimal" | "terse" | "csv" => terse = true,
            "json" => json = true,
            "json+" => {
                json = true;
                plus = true
            }
            "normal" => normal = true,
            other => return Err(format!("fio: invalid output format {other}")),
        }
    }
    // fio prints terse, then json, then normal.
    let mut out = Vec::new();
    if terse {
        out.push(OutputFormat::Terse);
    }
    if json {
        out.push(if plus {
            OutputFormat::JsonPlus
        } else {
            OutputFormat::Json
        });
    }
    if normal {
        out.push(OutputFormat::Normal);
    }
    Ok(out)
}

pub fn parse(args: &[String], env: &Env) -> Result<Invocation, ParseError> {
    parse_with_stdin(args, env, None)
}

pub fn parse_with_stdin(
    args: &[String],
    env: &Env,
    stdin: Option<&str>,
) -> Result<Invocation, ParseError> {
    let mut inv = Invocation {
        jobs: Vec::new(),
        output: None,
        formats: vec![OutputFormat::Normal],
        terse_version: 3,
        parse_only: false,
        readonly: false,
        sections: Vec::new(),
        job_files: Vec::new(),
        global_options: Vec::new(),
        other_switches: Vec::new(),
        info_request: None,
        warnings: Vec::new(),
    };
    // --section must be known before sections are skipped; fio sees it in order too,
    // but a job file is only read after all arguments, so collect it first for files
    // and apply it in order for --name.
    let mut b = Builder::new(env, Vec::new());
    let mut td = Td::None;
    let mut files: Vec<(String, usize)> = Vec::new();
    let mut i = 0usize;
    let mut only_files = false;
    while i < args.len() {
        let a = &args[i];
        let index = i + 1;
        i += 1;
        if only_files || !a.starts_with('-') || a == "-" {
            files.push((a.clone(), index));
            continue;
        }
        if a == "--" {
            only_files = true;
            continue;
        }
        let engine = match &td {
            Td::Job(j) => Some(j.state.options.ioengine.as_fio().to_string()),
            Td::Global => Some(b.def.options.ioengine.as_fio().to_string()),
            Td::None => None,
        };
        let opts = long_opts(engine.as_deref().filter(|e| table::engine_builtin(e)));
        let events = resolve(a, args, &mut i, index, &opts)?;
        for (lo, val) in events {
            let origin = Origin::Arg { index };
            match lo.target {
                Target::Switch(k) => {
                    let sw = FIO_SWITCHES[k].0;
                    let v = val.clone().unwrap_or_default();
                    match sw {
                        "output" => inv.output = Some(PathBuf::from(v)),
                        "output-format" => {
                            inv.formats = parse_formats(&v).map_err(|m| {
                                usage(index, format!("{m}; fio: failed parsing output-format"))
                            })?
                        }
                        "minimal" => inv.formats = vec![OutputFormat::Terse],
                        "terse-version" => {
                            let t = super::options::atoi(&v);
                            if !(2..=5).contains(&t) {
                                return Err(usage(index, "fio: bad terse version format".into()));
                            }
                            inv.terse_version = t as u32;
                        }
                        "parse-only" => inv.parse_only = true,
                        "readonly" => {
                            inv.readonly = true;
                            b.readonly = true;
                        }
                        "section" => {
                            if v == "global" {
                                return Err(usage(
                                    index,
                                    "fio: can't use global as only section".into(),
                                ));
                            }
                            inv.sections.push(v.clone());
                            b.sections.push(v);
                        }
                        "showcmd" => {
                            inv.info_request.get_or_insert_with(|| sw.to_string());
                        }
                        // fio prints these and exits at once: later arguments are
                        // never looked at.
                        "help" | "version" | "cmdhelp" | "enghelp" => {
                            inv.info_request = Some(match &val {
                                Some(v) => format!("{sw}={v}"),
                                None => sw.to_string(),
                            });
                            return Ok(inv);
                        }
                        _ => inv
                            .other_switches
                            .push((sw.to_string(), val.clone(), index)),
                    }
                }
                Target::Engine(def) => {
                    let input = format!("{}={}", lo.name, val.as_deref().unwrap_or(""));
                    let eng = engine.clone();
                    match &mut td {
                        Td::None => {}
                        Td::Global => {
                            let mut st = std::mem::take(&mut b.def);
                            let r = b.apply_def(
                                &mut st,
                                def,
                                val.as_deref(),
                                &origin,
                                &input,
                                true,
                                eng.as_deref(),
                            );
                            b.def = st;
                            r?;
                        }
                        Td::Job(j) => {
                            let state = &mut j.state;
                            let mut st = std::mem::take(state);
                            let r = b.apply_def(
                                &mut st,
                                def,
                                val.as_deref(),
                                &origin,
                                &input,
                                false,
                                eng.as_deref(),
                            );
                            *state = st;
                            r?;
                        }
                    }
                }
                Target::Job(def) => {
                    let is_name = def.name == "name";
                    if is_name && !matches!(td, Td::None) {
                        finish_td(&mut b, std::mem::replace(&mut td, Td::None))?;
                    }
                    if matches!(td, Td::None) {
                        let v = val.as_deref().unwrap_or("");
                        if is_name
                            && b.sections.iter().all(|s| s != v)
                            && !b.sections.is_empty()
                            && !v.starts_with("global")
                        {
                            // A skipped --name: fio ignores it (and the options after it
                            // then edit the defaults).
                            continue;
                        }
                        td = if !is_name || v.starts_with("global") {
                            Td::Global
                        } else {
                            Td::Job(Box::new(JobCtx {
                                state: b.def.inherit(),
                                section: v.to_string(),
                                origin: origin.clone(),
                            }))
                        };
                    }
                    if lo.has_arg == HasArg::Required && val.as_deref().is_none_or(str::is_empty) {
                        return Err(usage(
                            index,
                            format!("fio: option {} requires an argument", lo.name),
                        ));
                    }
                    let input = match &val {
                        Some(v) => format!("{}={}", lo.name, v),
                        None => lo.name.to_string(),
                    };
                    match &mut td {
                        Td::None => {}
                        Td::Global => {
                            let mut st = std::mem::take(&mut b.def);
                            let r = b.apply_def(
                                &mut st,
                                def,
                                val.as_deref(),
                                &origin,
                                &input,
                                true,
                                None,
                            );
                            b.def = st;
                            r?;
                        }
                        Td::Job(j) => {
                            let state = &mut j.state;
                            let mut st = std::mem::take(state);
                            let r = b.apply_def(
                                &mut st,
                                def,
                                val.as_deref(),
                                &origin,
                                &input,
                                false,
                                None,
                            );
                            *state = st;
                            r?;
                        }
                    }
                    // fio loads the engine as soon as --ioengine= is parsed.
                    if def.name == "ioengine" {
                        let e = val.as_deref().unwrap_or("");
                        if !table::engine_builtin(e) {
                            return Err(ParseError::new(
                                ErrorKind::Engine,
                                Some(origin.clone()),
                                format!("fio: engine {e} not loadable"),
                            ));
                        }
                    }
                }
            }
        }
    }
    finish_td(&mut b, td)?;
    let cmdline_globals = b.def.set.clone();
    for (k, (f, index)) in files.iter().enumerate() {
        inv.job_files.push(PathBuf::from(f));
        let r = if f == "-" {
            match stdin {
                Some(text) => {
                    b.parse_file_text(text.as_bytes(), std::path::Path::new("<stdin>"), k)
                }
                None => Err(ParseError::new(
                    ErrorKind::Io,
                    None,
                    "a job file '-' (standard input) is not read here",
                )),
            }
        } else {
            b.parse_file(std::path::Path::new(f), k)
        };
        r.map_err(|mut e| {
            if e.origin.is_none() {
                e.origin = Some(Origin::Arg { index: *index });
            }
            // `--size=16 m`: the space ended the option's value and fio took the
            // rest for a job file. Say so, beside fio's own words.
            if e.kind == ErrorKind::Io && !only_files_before(args, *index) {
                if let Some(prev) = (*index >= 2).then(|| &args[*index - 2]) {
                    // A number whose unit (or rest) was cut off by the space: the
                    // value ends in a digit and the "job file" is a short word.
                    let cut = prev.starts_with("--")
                        && prev.contains('=')
                        && prev.ends_with(|c: char| c.is_ascii_digit())
                        && f.len() <= 4
                        && !f.contains(['.', '/']);
                    if cut {
                        e.message = format!(
                            "{} ('{f}' was taken as a job file: the value of {prev} ends at the space before it)",
                            e.message
                        );
                    }
                }
            }
            e
        })?;
    }
    let out = b.finish();
    inv.jobs = out.jobs;
    inv.warnings = out.warnings;
    inv.global_options = if files.is_empty() {
        cmdline_globals
    } else {
        out.global_options
    };
    Ok(inv)
}

fn finish_td(b: &mut Builder<'_>, td: Td) -> Result<(), ParseError> {
    if let Td::Job(j) = td {
        let JobCtx {
            state,
            section,
            origin,
        } = *j;
        let name = state.options.name.clone().unwrap_or(section);
        b.add_job(state, &name, None, origin)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn formats() {
        assert_eq!(
            parse_formats("json,terse"),
            Ok(vec![OutputFormat::Terse, OutputFormat::Json])
        );
        assert_eq!(parse_formats("json+"), Ok(vec![OutputFormat::JsonPlus]));
        assert!(parse_formats("foo").is_err());
    }

    #[test]
    fn global_then_jobs() {
        // [V] fio --name=global --rw=randread --size=128m --name=job1 --name=job2
        let inv = parse(
            &args("--name=global --rw=randread --size=128m --name=job1 --name=job2"),
            &Env::fixed(),
        )
        .expect("parses");
        assert_eq!(inv.jobs.len(), 2);
        assert_eq!(inv.jobs[0].name, "job1");
        assert_eq!(inv.jobs[1].name, "job2");
        assert!(inv
            .jobs
            .iter()
            .all(|j| j.options.rw.mode == super::super::RwMode::RandRead));
    }

    #[test]
    fn abbreviations_and_ambiguity() {
        let env = Env::fixed();
        assert!(parse(&args("--name=a --ioeng=libaio"), &env).is_ok());
        let e = parse(&args("--name=a --io=libaio"), &env).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Usage);
        assert!(e.to_string().contains("ambiguous"), "{e}");
        let e = parse(&args("--out=x --name=a"), &env).unwrap_err();
        assert!(
            e.to_string().contains("'--output' '--output-format'"),
            "{e}"
        );
    }

    #[test]
    fn short_options_like_getopt_long_only() {
        let env = Env::fixed();
        // -bm: bandwidth-log and minimal; -F json: output-format; -V4 terse version.
        let inv = parse(&args("-bm --name=a"), &env).expect("parses");
        assert_eq!(inv.formats, vec![OutputFormat::Terse]);
        let inv = parse(&args("-F json -V4 -P --name=a"), &env).expect("parses");
        assert_eq!(inv.formats, vec![OutputFormat::Json]);
        assert_eq!(inv.terse_version, 4);
        assert!(inv.parse_only);
        // -bs=4k is the long option bs (more than one letter), -k abbreviates kb_base.
        let inv = parse(&args("--name=a -bs=8k -k 1000"), &env).expect("parses");
        assert_eq!(inv.jobs[0].options.bs_bytes[0], 8192);
        assert_eq!(inv.jobs[0].options.kb_base, 1000);
        // -g is ambiguous, -q unknown.
        assert_eq!(parse(&args("-g"), &env).unwrap_err().kind, ErrorKind::Usage);
        assert_eq!(
            parse(&args("-q"), &env).unwrap_err().kind,
            ErrorKind::UnknownOption
        );
    }

    #[test]
    fn engine_options_after_ioengine() {
        let env = Env::fixed();
        assert!(parse(&args("--name=a --ioengine=nbd --uri=x"), &env).is_ok());
        let e = parse(&args("--name=a --uri=x --ioengine=nbd"), &env).unwrap_err();
        assert_eq!(e.kind, ErrorKind::UnknownOption);
    }

    #[test]
    fn required_argument_takes_next() {
        // [V] pitfall: --direct takes the next argument as its value.
        let env = Env::fixed();
        let e = parse(&args("--name=a --direct --rw=read"), &env).unwrap_err();
        assert!(e.to_string().contains("direct=--rw=read"), "{e}");
        assert!(parse(&args("--name=a --stonewall --rw=read"), &env).is_ok());
    }
}
