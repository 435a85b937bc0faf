//! `cairn completions SHELL` and `cairn man`: made from the command line itself, printed on
//! stdout, needing no knowledge repository.

use std::process::Stdio;

use crate::support::*;

#[test]
fn bash_completions_name_the_commands_and_bash_accepts_them() {
    let env = Env::new();
    let run = env.cairn(&["completions", "bash"]).code(0);
    assert_eq!(run.stderr, "");
    let script = run.stdout;
    // Subcommands and their own subcommands and flags are all there.
    for word in [
        "recall",
        "slog",
        "hooks",
        "install",
        "--profile",
        "completions",
    ] {
        assert!(script.contains(word), "no {word} in the bash script");
    }
    assert!(
        script.contains("complete -F _cairn"),
        "not a bash completion"
    );
    let path = env.path().join("cairn.bash");
    std::fs::write(&path, &script).unwrap();
    let out = env
        .command("bash", env.path())
        .arg("-n")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bash -n refused it: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Sourced into a shell, the function answers a completion of `cairn rec`.
    let out = env
        .command("bash", env.path())
        .args([
            "-c",
            &format!(
                ". '{}'; COMP_WORDS=(cairn rec); COMP_CWORD=1; _cairn cairn rec cairn; \
                 printf '%s\\n' \"${{COMPREPLY[@]}}\"",
                path.display()
            ),
        ])
        .output()
        .unwrap();
    let words = String::from_utf8_lossy(&out.stdout);
    assert!(
        words.lines().any(|w| w == "recall"),
        "`cairn rec<TAB>` did not offer recall: {words:?} {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_shell_gets_its_own_script() {
    let env = Env::new();
    let marks = [
        ("zsh", "#compdef cairn"),
        ("fish", "complete -c cairn"),
        ("elvish", "edit:completion:arg-completer[cairn]"),
        ("powershell", "Register-ArgumentCompleter"),
    ];
    for (shell, mark) in marks {
        let run = env.cairn(&["completions", shell]).code(0);
        assert!(run.stdout.contains(mark), "{shell}: no {mark}");
        assert!(run.stdout.contains("recall"), "{shell}: no recall");
    }
    let data = env.cairn(&["--json", "completions", "fish"]).code(0).data();
    assert_eq!(data["shell"], "fish");
    assert!(
        data["script"]
            .as_str()
            .unwrap()
            .contains("complete -c cairn")
    );
    env.cairn(&["completions", "tcsh"])
        .code(2)
        .stderr_has("invalid value 'tcsh'");
}

#[test]
fn man_prints_a_roff_page_that_groff_renders() {
    let env = Env::new();
    let run = env.cairn(&["man"]).code(0);
    let page = run.stdout;
    assert!(
        page.lines().any(|l| l.starts_with(".TH cairn 1")),
        "no .TH line: {}",
        &page[..page.len().min(300)]
    );
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH SUBCOMMANDS"] {
        assert!(page.contains(section), "no {section}");
    }
    assert!(page.contains("completions"));
    // Rendered when groff is here; the test does not require it.
    let groff = env
        .command("groff", env.path())
        .args(["-man", "-Tutf8"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    if let Ok(mut child) = groff {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(page.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        // groff overstrikes bold letters (`c\bc`): drop the overstrikes before reading it.
        let plain: String = text
            .split('\u{8}')
            .enumerate()
            .map(|(i, s)| {
                if i == 0 {
                    s
                } else {
                    &s[s.chars().next().map_or(0, char::len_utf8)..]
                }
            })
            .collect();
        assert!(plain.contains("NAME"), "{plain}");
        assert!(plain.contains("git-backed memory"), "{plain}");
    }
}

#[test]
fn man_dir_writes_a_page_per_command() {
    let env = Env::new();
    let data = env
        .cairn(&["--json", "man", "--dir", "pages"])
        .code(0)
        .data();
    let written: Vec<&str> = data["written"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for name in [
        "cairn.1",
        "cairn-recall.1",
        "cairn-adr-new.1",
        "cairn-hooks-install.1",
    ] {
        assert!(written.contains(&name), "no {name} in {written:?}");
        let page = std::fs::read_to_string(env.path().join("pages").join(name)).unwrap();
        assert!(page.contains(".TH "), "{name}");
    }
    let page = std::fs::read_to_string(env.path().join("pages/cairn-adr-new.1")).unwrap();
    assert!(page.contains("supersedes"), "{page}");
    let on_disk = std::fs::read_dir(env.path().join("pages")).unwrap().count();
    assert_eq!(on_disk, written.len());
}
