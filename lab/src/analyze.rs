//! `lab analyze`: the analyzer's one command line (`analyzer::cli`) as the lab's front shows it:
//! its errors and warnings start with `lab:` like every other command's, and the series of
//! 100 ms windows stays in the files unless `--series` ([`crate::front`]). The flags, the
//! figures and the exit codes are the analyzer's: 0 fine; 1 outputs could not be written, or
//! client and server logs of a complete run disagree; 2 bad input. The lab adds `--junit FILE`
//! (every check and threshold as a JUnit test case, [`crate::gate`]) and exit 99 when the
//! analysis was otherwise fine and a threshold of the scenario broke.

use std::cell::Cell;
use std::ffi::OsString;
use std::path::PathBuf;

use crate::front::Show;

/// `args` without `--junit FILE` (or `--junit=FILE`), and the file, checked.
fn take_junit(args: Vec<OsString>) -> Result<(Vec<OsString>, Option<PathBuf>), String> {
    let mut rest = Vec::with_capacity(args.len());
    let mut junit = None;
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let text = a.to_string_lossy();
        if text == "--" {
            rest.push(a);
            rest.extend(it.by_ref());
            break;
        }
        let value = if text == "--junit" {
            Some(
                it.next()
                    .ok_or("--junit needs a value: a file to write, such as junit.xml")?
                    .to_string_lossy()
                    .into_owned(),
            )
        } else {
            text.strip_prefix("--junit=").map(str::to_string)
        };
        match value {
            Some(v) => junit = Some(crate::gate::junit_path(&v)?),
            None => rest.push(a),
        }
    }
    Ok((rest, junit))
}

/// `lab analyze ARGS` (`args[0]` is `lab analyze`); the exit code.
pub fn main(args: Vec<OsString>) -> i32 {
    let (args, junit) = match take_junit(args) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("lab: {e}");
            return crate::EXIT_USAGE;
        }
    };
    crate::gate::start();
    let judged = Cell::new(0);
    let front = analyzer::cli::Front {
        name: "lab analyze",
        model: simulator::model_run,
        error: "lab: ",
        warning: "lab: warning: ",
        clap_error: &|e: &clap::Error| e03_plan::cli::clap_exit("lab", e),
        print_tables: &|summary, dir, series| {
            let _ = crate::front::set(Show {
                series,
                json: false,
            });
            let shown = crate::front::print_tables(summary, dir);
            judged.set(crate::gate::judge(summary, dir, 0));
            shown
        },
    };
    let code = analyzer::cli::main_entry_with(args, &front);
    let code = if code == 0 && judged.get() == crate::gate::THRESHOLD_BROKEN {
        crate::gate::THRESHOLD_BROKEN
    } else {
        code
    };
    crate::gate::finish(junit.as_deref(), code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn junit_is_taken_out_of_the_analyzers_arguments() {
        let args = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        let (rest, junit) = take_junit(args(&["lab analyze", "--junit", "j.xml", "dir"])).unwrap();
        assert_eq!(rest, args(&["lab analyze", "dir"]));
        assert_eq!(junit, Some(PathBuf::from("j.xml")));
        let (rest, junit) = take_junit(args(&["lab analyze", "dir", "--junit=k.xml"])).unwrap();
        assert_eq!(
            (rest, junit),
            (args(&["lab analyze", "dir"]), Some("k.xml".into()))
        );
        let e = take_junit(args(&["lab analyze", "dir", "--junit"])).unwrap_err();
        assert!(e.contains("--junit needs a value"), "{e}");
        let e = take_junit(args(&["lab analyze", "--junit", "/no/such/dir/j.xml"])).unwrap_err();
        assert!(
            e.starts_with("invalid --junit \"/no/such/dir/j.xml\""),
            "{e}"
        );
    }
}
