//! Commands that run another command: `sudo`, `env`, `time`, `nice`,
//! `nohup`, `xargs`, `busybox`, `timeout`, … Both processes start, so both
//! are programs of the segment, and the rules about the wrapped one must see
//! it first in its argv. One table says, per wrapper, which options take a
//! separate argument and how many plain arguments come before the command.

/// A wrapper: its name, its options that take a separate argument, and the
/// plain arguments it takes before the wrapped command.
struct Wrapper {
    name: &'static str,
    arg_options: &'static [&'static str],
    leading_args: usize,
}

const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        name: "sudo",
        arg_options: &[
            "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R",
        ],
        leading_args: 0,
    },
    Wrapper {
        name: "doas",
        arg_options: &["-u", "-C"],
        leading_args: 0,
    },
    Wrapper {
        name: "env",
        arg_options: &["-u", "-C", "--unset", "--chdir"],
        leading_args: 0,
    },
    Wrapper {
        name: "time",
        arg_options: &["-f", "-o", "--format", "--output"],
        leading_args: 0,
    },
    Wrapper {
        name: "nice",
        arg_options: &["-n", "--adjustment"],
        leading_args: 0,
    },
    Wrapper {
        name: "nohup",
        arg_options: &[],
        leading_args: 0,
    },
    Wrapper {
        name: "setsid",
        arg_options: &[],
        leading_args: 0,
    },
    Wrapper {
        name: "stdbuf",
        arg_options: &["-i", "-o", "-e"],
        leading_args: 0,
    },
    Wrapper {
        name: "unbuffer",
        arg_options: &[],
        leading_args: 0,
    },
    Wrapper {
        name: "ionice",
        arg_options: &["-c", "-n", "-p", "-P", "-u"],
        leading_args: 0,
    },
    Wrapper {
        name: "timeout",
        arg_options: &["-s", "-k", "--signal", "--kill-after"],
        leading_args: 1,
    },
    Wrapper {
        name: "xargs",
        arg_options: &[
            "-I",
            "-n",
            "-P",
            "-d",
            "-E",
            "-L",
            "-s",
            "-a",
            "--delimiter",
            "--max-args",
        ],
        leading_args: 0,
    },
    Wrapper {
        name: "busybox",
        arg_options: &[],
        leading_args: 0,
    },
    Wrapper {
        name: "command",
        arg_options: &[],
        leading_args: 0,
    },
    Wrapper {
        name: "builtin",
        arg_options: &[],
        leading_args: 0,
    },
    Wrapper {
        name: "exec",
        arg_options: &["-a"],
        leading_args: 0,
    },
    Wrapper {
        name: "noglob",
        arg_options: &[],
        leading_args: 0,
    },
    Wrapper {
        name: "nocorrect",
        arg_options: &[],
        leading_args: 0,
    },
    Wrapper {
        name: "chroot",
        arg_options: &["--userspec", "--groups"],
        leading_args: 1,
    },
    Wrapper {
        name: "strace",
        arg_options: &["-o", "-e", "-s", "-p", "-u", "-E"],
        leading_args: 0,
    },
    Wrapper {
        name: "ltrace",
        arg_options: &["-o", "-e", "-s", "-p", "-u"],
        leading_args: 0,
    },
    Wrapper {
        name: "taskset",
        arg_options: &[],
        leading_args: 1,
    },
    Wrapper {
        name: "caffeinate",
        arg_options: &["-t", "-w"],
        leading_args: 0,
    },
];

/// The last path segment: the program a path runs (`/usr/bin/rm` → `rm`).
pub fn basename(word: &str) -> &str {
    let w = word.trim_end_matches('/');
    w.rsplit('/').next().unwrap_or(w)
}

/// Where the wrapped program starts in `words`, with every wrapper met on
/// the way (their positions). `env`'s `NAME=value` words are skipped too.
pub fn unwrap(words: &[String]) -> (usize, Vec<usize>) {
    let mut i = 0;
    let mut wrappers = Vec::new();
    while i < words.len() {
        let name = basename(&words[i]);
        let Some(w) = WRAPPERS.iter().find(|w| w.name == name) else {
            break;
        };
        wrappers.push(i);
        i += 1;
        let mut leading = w.leading_args;
        while i < words.len() {
            let a = words[i].as_str();
            if a == "--" {
                i += 1;
                break;
            }
            if a.starts_with('-') && a.len() > 1 {
                i += 1;
                let opt = a.split('=').next().unwrap_or(a);
                if !a.contains('=') && w.arg_options.contains(&opt) {
                    i += 1;
                }
                continue;
            }
            if w.name == "env" && a.contains('=') && !a.starts_with('=') {
                i += 1;
                continue;
            }
            if leading > 0 {
                leading -= 1;
                i += 1;
                continue;
            }
            break;
        }
    }
    (i.min(words.len()), wrappers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(s: &str) -> (String, Vec<String>) {
        let words: Vec<String> = s.split(' ').map(str::to_string).collect();
        let (i, w) = unwrap(&words);
        (
            words[i..].join(" "),
            w.iter().map(|&j| basename(&words[j]).to_string()).collect(),
        )
    }

    #[test]
    fn wrappers_are_unwrapped() {
        assert_eq!(
            run("sudo -u root -E nohup env A=1 python3 x.py").0,
            "python3 x.py"
        );
        assert_eq!(run("timeout -s KILL 10 /bin/rm -rf /").0, "/bin/rm -rf /");
        assert_eq!(run("nice -n 19 ionice -c 3 tar cf x").0, "tar cf x");
        assert_eq!(run("/usr/bin/busybox rm -rf /").0, "rm -rf /");
        assert_eq!(run("xargs -0 -I {} rm {}").0, "rm {}");
        assert_eq!(run("time -p ls").1, ["time"]);
        assert_eq!(run("sudo").0, "");
        assert_eq!(basename("/usr/bin/python3"), "python3");
    }
}
