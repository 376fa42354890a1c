//! `flashpath`: run fio jobs on a simulated host and flash device (the library,
//! `src/lib.rs`, holds the commands).

fn main() -> std::process::ExitCode {
    flashpath_cli::main()
}
