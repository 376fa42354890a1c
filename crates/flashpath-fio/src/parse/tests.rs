//! Grammar unit tests. [V]: the behaviour was verified by running fio 3.33; [S]: read in
//! fio 3.33's source (init.c, parse.c, options.c, iolog.c).

use super::*;
use std::path::Path;

fn jobs(text: &str) -> Vec<Job> {
    match parse_job_file_text(text, Path::new("t.fio"), &Env::fixed()) {
        Ok(j) => j,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

fn err(text: &str) -> ParseError {
    match parse_job_file_text(text, Path::new("t.fio"), &Env::fixed()) {
        Ok(j) => panic!("expected an error, got {} jobs", j.len()),
        Err(e) => e,
    }
}

#[test]
fn sections_and_names() {
    // [V] inner spaces kept; [globalx] is global.
    let j = jobs("[  spaced name  ]\n[globalx]\nbs=1k\n[b]\n");
    assert_eq!(j[0].name, "  spaced name  ");
    assert_eq!(j[1].options.bs_bytes, [1024; 3]);
    assert_eq!(j.len(), 2);
}

#[test]
fn global_inheritance_in_file_order() {
    // [V] early=64k, late=128k, late2=1k.
    let j =
        jobs("[global]\nbs=64k\n[early]\n[global]\nbs=128k\n[late]\n[globalx]\nbs=1k\n[late2]\n");
    let bs: Vec<u64> = j.iter().map(|j| j.options.bs_bytes[0]).collect();
    assert_eq!(bs, vec![65536, 131072, 1024]);
}

#[test]
fn option_outside_section() {
    let e = err("bs=4k\n[a]\n");
    assert_eq!(e.kind, ErrorKind::Syntax);
    assert_eq!(
        e.to_string(),
        "t.fio:1: fio: option <bs=4k> outside of [] job section"
    );
}

#[test]
fn unknown_option_is_loud() {
    // [V] Bad option <...>.
    let e = err("[a]\nfoo=1\n");
    assert_eq!(e.kind, ErrorKind::UnknownOption);
    assert!(
        e.to_string().starts_with("t.fio:2: Bad option <foo=1>"),
        "{e}"
    );
}

#[test]
fn value_spaces_trap() {
    // [V] size = 1m is 1 byte; rw = randread is rejected.
    let j = jobs("[a]\nsize = 1m\n");
    assert_eq!(j[0].options.size, Some(SizeSpec::Bytes(1)));
    err("[a]\nrw = randread\n");
}

#[test]
fn quotes_not_special_and_last_wins() {
    let j = jobs("[a]\ndescription=\"x\" y\nbs=8k\nbs=16k\n");
    assert_eq!(j[0].options.description.as_deref(), Some("\"x\" y"));
    assert_eq!(j[0].options.bs_bytes[0], 16384);
    assert_eq!(
        j[0].set_options.iter().filter(|o| o.name == "bs").count(),
        2
    );
}

#[test]
fn per_direction_lists() {
    // [V] (checked against fio 3.33).
    let bs = |v: &str| jobs(&format!("[a]\nbs={v}\n"))[0].options.bs_bytes;
    assert_eq!(bs("8k,32k"), [8192, 32768, 32768]);
    assert_eq!(bs("8k,32k,"), [8192, 32768, 4096]);
    assert_eq!(bs(",8k"), [4096, 8192, 8192]);
    assert_eq!(bs(",8k,"), [4096, 8192, 4096]);
    let j = jobs("[a]\nbsrange=1k:4k,2k-8k\n");
    assert_eq!(
        j[0].options.bsrange_bytes,
        [Some((1024, 4096)), Some((2048, 8192)), Some((2048, 8192))]
    );
}

#[test]
fn booleans_and_flags() {
    // [V] (checked against fio 3.33).
    err("[a]\ndirect=true\n");
    err("[a]\ndirect=2\n");
    err("[a]\ndirect\n");
    let j = jobs("[a]\ntime_based\nnorandommap=1\nthread=0\n");
    assert!(j[0].options.time_based);
    assert!(j[0].options.norandommap);
    assert!(!j[0].options.thread);
    let tb = j[0].set_options.iter().find(|o| o.name == "time_based");
    assert_eq!(tb.map(|o| o.value.clone()), Some(None));
}

#[test]
fn aliases_are_canonical() {
    let j = jobs("[a]\nblocksize=8k\ntimeout=10\nreadwrite=randrw\nwait_for_previous\n");
    let names: Vec<&str> = j[0].set_options.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, vec!["bs", "runtime", "rw", "stonewall"]);
    assert_eq!(j[0].options.runtime_ns, 10_000_000_000);
}

#[test]
fn kb_base_is_parsed_first() {
    let j = jobs("[a]\nbs=4k\nkb_base=1000\n");
    assert_eq!(j[0].options.bs_bytes[0], 4000);
}

#[test]
fn env_and_keywords() {
    let mut env = Env::fixed();
    env.vars.insert("FOO".into(), "bar".into());
    let j = parse_job_file_text(
        "[a]\nfilename=/mnt/${FOO}.dat\ndescription=$FOO\nsize=2*$mb_memory\n",
        Path::new("t.fio"),
        &env,
    )
    .expect("parses");
    assert_eq!(j[0].options.filename.as_deref(), Some("/mnt/bar.dat"));
    assert_eq!(j[0].options.description.as_deref(), Some("$FOO"));
    assert_eq!(j[0].options.size, Some(SizeSpec::Bytes(2 * 16384)));
    let f = j[0].set_options.iter().find(|o| o.name == "filename");
    assert_eq!(
        f.and_then(|o| o.value.clone()).as_deref(),
        Some("/mnt/bar.dat")
    );
}

#[test]
fn groups_and_clones() {
    // [V] the groups of tests/data/report/groups.fio (fio 3.33's report: groups.json):
    // a,a,b in g0, c in g1, d in g2, e in g2.
    let j = jobs("[a]\nnumjobs=2\n[b]\n[c]\nstonewall\n[d]\nnew_group\n[e]\nwait_for=c\n");
    let g: Vec<(String, u32, u32, u32)> = j
        .iter()
        .map(|j| (j.name.clone(), j.group_id, j.thread_number, j.clone_index))
        .collect();
    assert_eq!(
        g,
        vec![
            ("a".into(), 0, 1, 0),
            ("a".into(), 0, 2, 1),
            ("b".into(), 0, 3, 0),
            ("c".into(), 1, 4, 0),
            ("d".into(), 2, 5, 0),
            ("e".into(), 2, 6, 0),
        ]
    );
    assert_eq!(j[5].wait_for.as_deref(), Some("c"));
}

#[test]
fn name_in_global_does_not_rename() {
    // Measured with fio 3.33's JSON output (HOWTO suggests otherwise): the section
    // name wins over an inherited name=, a job's own name= wins over its section.
    let j = jobs("[global]\nname=foo\n[a]\n[b]\nname=x\n");
    assert_eq!(j[0].name, "a");
    assert_eq!(j[1].name, "x");
    assert_eq!(j[1].section, "b");
}

#[test]
fn engine_options_anywhere_in_file() {
    // [V] order relative to ioengine= does not matter in a file.
    let j = jobs("[a]\nuri=nbd://x\nioengine=nbd\n");
    assert_eq!(j[0].options.uri.as_deref(), Some("nbd://x"));
    let e = err("[a]\nuri=nbd://x\n");
    assert_eq!(e.kind, ErrorKind::UnknownOption);
    let e = err("[a]\nioengine=libzbc\nzbd_foo=1\n");
    assert_eq!(e.kind, ErrorKind::Engine);
}

#[test]
fn profile_and_deprecated_options_accepted() {
    // [V] threads=1 is a no-op profile option.
    let j = jobs("[a]\nthreads=1\nverifysort=1\n");
    assert!(!j[0].options.thread);
    // A hard-deprecated option fails, as in fio 3.33.
    err("[a]\nrwmixcycle=5\n");
}

#[test]
fn sync_engine_depth() {
    let j = jobs("[a]\niodepth=32\n[b]\niodepth=32\nioengine=libaio\n");
    assert_eq!(j[0].options.iodepth, 32);
    assert_eq!(j[0].options.effective_iodepth(), 1);
    assert_eq!(j[1].options.effective_iodepth(), 32);
}

#[test]
fn command_line_and_files() {
    let dir = std::env::temp_dir().join(format!("fp-parse-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let f1 = dir.join("one.fio");
    let f2 = dir.join("two.fio");
    std::fs::write(&f1, "[global]\nbs=64k\n[x]\n[y]\n").expect("write");
    std::fs::write(&f2, "[z]\n").expect("write");
    let args: Vec<String> = vec![
        "--runtime=5".into(),
        "--output-format=json".into(),
        f1.to_string_lossy().into_owned(),
        f2.to_string_lossy().into_owned(),
    ];
    let inv = parse_command_line(&args, &Env::fixed()).expect("parses");
    assert_eq!(inv.jobs.len(), 3);
    assert_eq!(inv.formats, vec![OutputFormat::Json]);
    // Command-line globals reach the first file only; later files restart.
    assert_eq!(inv.jobs[0].options.runtime_ns, 5_000_000_000);
    assert_eq!(inv.jobs[2].options.runtime_ns, 0);
    assert_eq!(inv.jobs[2].options.bs_bytes[0], 4096);
    // The first job of a later file gets an implicit stonewall → new group.
    assert!(inv.jobs[2].stonewall);
    assert_eq!(inv.jobs[2].group_id, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn include_relative_to_file() {
    let dir = std::env::temp_dir().join(format!("fp-inc-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    std::fs::write(dir.join("inc.fio"), "bs=8k\n").expect("write");
    std::fs::write(dir.join("main.fio"), "[a]\ninclude inc.fio\n").expect("write");
    std::fs::write(dir.join("loop.fio"), "include loop.fio\n").expect("write");
    std::fs::write(dir.join("main2.fio"), "[a]\ninclude loop.fio\n").expect("write");
    let env = Env::fixed();
    let j = parse_job_file(&dir.join("main.fio"), &env).expect("parses");
    assert_eq!(j[0].options.bs_bytes[0], 8192);
    let bs = &j[0].set_options[0];
    assert_eq!(
        bs.origin.to_string(),
        format!("{}:1", dir.join("inc.fio").display())
    );
    let e = parse_job_file(&dir.join("main2.fio"), &env).unwrap_err();
    assert_eq!(e.kind, ErrorKind::IncludeLoop);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn clones_count_down_like_fio() {
    // Measured: numjobs=3 offset_increment=1m → threads at offsets 0, 2m, 1m.
    let j = jobs("[a]\nnumjobs=3\noffset_increment=1m\n");
    let idx: Vec<u32> = j.iter().map(|j| j.clone_index).collect();
    assert_eq!(idx, vec![0, 2, 1]);
    assert!(j
        .iter()
        .all(|j| j.options.numjobs == 1 || j.clone_index == 0));
}

#[test]
fn stdin_job_file() {
    let args = vec!["--parse-only".to_string(), "-".to_string()];
    let inv = parse_command_line_with_stdin(&args, &Env::fixed(), "[a]\nbs=8k\n").expect("parses");
    assert!(inv.parse_only);
    assert_eq!(inv.jobs[0].options.bs_bytes[0], 8192);
    assert_eq!(inv.jobs[0].set_options[0].origin.to_string(), "<stdin>:2");
    assert!(parse_command_line(&args, &Env::fixed()).is_err());
}

#[test]
fn cpu_lists() {
    assert_eq!(count_cpu_list("0-3,8,10-11"), Some(7));
    assert_eq!(count_cpu_list("0"), Some(1));
    assert_eq!(count_cpu_list("x"), None);
}

#[test]
fn mailing_list_command_line() {
    let args: Vec<String> = "--name=randread --ioengine=libaio --iodepth=16 --rw=randread \
        --bs=4k --direct=1 --size=1G --numjobs=4 --runtime=60 --time_based \
        --group_reporting --filename=/dev/nvme0n1 --output-format=json+ --eta=never"
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let inv = parse_command_line(&args, &Env::fixed()).expect("parses");
    assert_eq!(inv.jobs.len(), 4);
    let o = &inv.jobs[0].options;
    assert_eq!(o.ioengine, IoEngine::Libaio);
    assert_eq!(o.iodepth, 16);
    assert!(o.direct && o.time_based && o.group_reporting);
    assert_eq!(o.size, Some(SizeSpec::Bytes(1 << 30)));
    assert_eq!(o.runtime_ns, 60_000_000_000);
    assert_eq!(inv.formats, vec![OutputFormat::JsonPlus]);
    assert_eq!(inv.other_switches[0].0, "eta");
    let origin = inv.jobs[0]
        .set_options
        .iter()
        .find(|s| s.name == "iodepth")
        .map(|s| s.origin.to_string());
    assert_eq!(origin.as_deref(), Some("argument 3"));
}

#[test]
fn section_selection() {
    // [S] --section runs only the named jobs; globals are always parsed.
    let dir = std::env::temp_dir().join(format!("fp-sec-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    std::fs::write(
        dir.join("j.fio"),
        "[global]\nbs=8k\n[x]\n[y]\nfoo_unknown=1\n[z]\n",
    )
    .expect("write");
    let mut env = Env::fixed();
    env.cwd = dir.clone();
    let args: Vec<String> = ["--section=x", "--section=z", "j.fio"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let inv = parse_command_line(&args, &env).expect("skipped sections are not parsed");
    let names: Vec<&str> = inv.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, vec!["x", "z"]);
    assert!(inv.jobs.iter().all(|j| j.options.bs_bytes[0] == 8192));
    assert_eq!(inv.sections, vec!["x".to_string(), "z".to_string()]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn typed_options_from_the_reference() {
    // [V] size=25% offset=50%; rate=1250 is bytes/s; the later of
    // rwmixread/rwmixwrite wins; direct/buffered, the later wins.
    let j = jobs(
        "[a]\nsize=25%\noffset=50%\nrate=1250\nrate_iops=,200\nrwmixread=70\nrwmixwrite=10\n\
         direct=1\nbuffered=1\nstartdelay=1-3\nthinktime=1ms\nthinktime_blocks=4\n\
         io_size=64m\nfilename=/dev/a\\:b\nnumjobs=$ncpus\nrw=randrw:8\n",
    );
    let o = &j[0].options;
    assert_eq!(o.size, Some(SizeSpec::Percent(25)));
    assert_eq!(o.offset, SizeSpec::Percent(50));
    assert_eq!(o.rate_bytes_per_s, [1250; 3]);
    assert_eq!(o.rate_iops, [0, 200, 200]);
    assert_eq!(o.rwmix_read_percent, 90);
    assert_eq!(o.rwmix_write_percent(), 10);
    assert!(!o.direct);
    assert_eq!(o.startdelay_ns, (1_000_000_000, 3_000_000_000));
    assert_eq!(o.thinktime_ns, 1_000_000);
    assert_eq!(o.thinktime_blocks, 4);
    assert_eq!(o.io_size, Some(SizeSpec::Bytes(64 << 20)));
    assert_eq!(o.filename.as_deref(), Some("/dev/a\\:b"));
    assert_eq!(j.len(), 4, "numjobs=$ncpus with 4 CPUs");
    assert_eq!(o.rw.mode, RwMode::RandRw);
    assert_eq!(o.rw.modifier, RwModifier::RandomEvery(8));
    assert_eq!(o.block_size(Ddir::Read), BlockSizeSpec::Fixed(4096));
}

#[test]
fn block_size_precedence_and_depth_fixups() {
    let j = jobs(
        "[a]\nbs=8k\nbsrange=1k-4k\nbssplit=,16k/100\nioengine=io_uring\niodepth=16\n\
         iodepth_batch=0\niodepth_batch_complete_min=4\niodepth_low=32\n",
    );
    let o = &j[0].options;
    assert_eq!(
        o.block_size(Ddir::Read),
        BlockSizeSpec::Range {
            min_bytes: 1024,
            max_bytes: 4096
        }
    );
    assert_eq!(
        o.block_size(Ddir::Write),
        BlockSizeSpec::Split(vec![BsSplitEntry {
            bs_bytes: 16384,
            percent: 100
        }])
    );
    assert_eq!(o.effective_iodepth_batch(), 16);
    assert_eq!(o.effective_iodepth_batch_complete_max(), 4);
    assert_eq!(o.effective_iodepth_low(), 16);
    assert_eq!(
        o.ioengine.submission(),
        Submission::Async { sync_trim: true }
    );
    assert_eq!(
        IoEngine::Nbd.submission(),
        Submission::Async { sync_trim: false }
    );
    assert!(IoEngine::Pvsync2.is_sync());
}

#[test]
fn logging_options() {
    let j = jobs(
        "[a]\nwrite_bw_log\nwrite_lat_log=lat\nwrite_iops_log=io\nlog_avg_msec=100\n\
         write_hist_log=h\nlog_hist_msec=50\nlog_offset=1\nwrite_iolog=x.log\nread_iolog=y.log\n",
    );
    let o = &j[0].options;
    assert_eq!(o.write_bw_log.as_deref(), Some(""));
    assert_eq!(o.write_lat_log.as_deref(), Some("lat"));
    assert_eq!(o.write_iops_log.as_deref(), Some("io"));
    assert_eq!(o.log_avg_msec, 100);
    assert_eq!(o.write_hist_log.as_deref(), Some("h"));
    assert_eq!(o.log_hist_msec, 50);
    assert!(o.log_offset);
    assert_eq!(o.write_iolog.as_deref(), Some("x.log"));
    assert_eq!(o.read_iolog.as_deref(), Some("y.log"));
    // A bare write_bw_log is a flag-like string: recorded without a value.
    assert_eq!(j[0].set_options[0].value, None);
}

#[test]
fn blank_before_value_warns() {
    let inv = parse_command_line_with_stdin(&["-".to_string()], &Env::fixed(), "[a]\nsize = 1m\n")
        .expect("parses");
    assert_eq!(inv.jobs[0].options.size, Some(SizeSpec::Bytes(1)));
    assert_eq!(
        inv.warnings,
        vec![
            "<stdin>:2: value of 'size' starts with a blank; fio reads ' 1m' as written"
                .to_string()
        ]
    );
}

#[test]
fn help_stops_argument_parsing() {
    let args: Vec<String> = ["--name=a", "--cmdhelp=bs", "--no-such-option"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let inv = parse_command_line(&args, &Env::fixed()).expect("parses");
    assert_eq!(inv.info_request.as_deref(), Some("cmdhelp=bs"));
    assert!(inv.jobs.is_empty());
}
