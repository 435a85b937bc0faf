//! `cairn completions SHELL` and `cairn man [--dir DIR]`: shell integration, made from the clap
//! types themselves (clap_complete, clap_mangen), so a new command or flag is completed and
//! documented without anything else to edit. Neither needs a knowledge repository.

use std::path::{Path, PathBuf};

use clap::CommandFactory;
use serde_json::json;

use super::{Cli, Ctx};
use crate::error::{Error, Result};
use crate::files;
use crate::output::Report;

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete in
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write one page per command (cairn.1, cairn-slog.1, cairn-adr-new.1, …) into DIR instead
    /// of printing cairn.1
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The completion script for `args.shell`, on stdout.
pub fn completions(args: CompletionsArgs) -> Result<Report> {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "cairn", &mut script);
    let script = String::from_utf8(script)
        .map_err(|_| Error::bad_input("the completion script is not UTF-8"))?;
    let data = json!({ "shell": args.shell.to_string(), "script": script });
    Ok(Report::new("completions", data, script))
}

/// The man page of cairn on stdout, or a page per command in `--dir`.
pub fn man(ctx: &Ctx, args: ManArgs) -> Result<Report> {
    match args.dir {
        None => {
            let page = render(Cli::command())?;
            let data = json!({ "page": page });
            Ok(Report::new("man", data, page))
        }
        Some(dir) => {
            let dir = ctx.cwd.join(dir);
            let mut written = Vec::new();
            let mut root = Cli::command().disable_help_subcommand(true);
            root.build();
            write_pages(&root, &dir, &mut written)?;
            let human = format!(
                "wrote {} in {}",
                crate::output::count(written.len(), "man page"),
                dir.display()
            );
            Ok(Report::new(
                "man",
                json!({ "dir": dir, "written": written }),
                human,
            ))
        }
    }
}

fn render(cmd: clap::Command) -> Result<String> {
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut page)
        .map_err(|e| Error::io("the man page", &e))?;
    String::from_utf8(page).map_err(|_| Error::bad_input("the man page is not UTF-8"))
}

/// Writes the page of `cmd` and of every visible subcommand under it (named after their
/// whole command line: `cairn-adr-new.1`), each atomically.
fn write_pages(cmd: &clap::Command, dir: &Path, written: &mut Vec<String>) -> Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, written)?;
    }
    let man = clap_mangen::Man::new(cmd.clone());
    let name = man.get_filename();
    let page = render(cmd.clone())?;
    files::write_atomic(&dir.join(&name), page.as_bytes())?;
    written.push(name);
    Ok(())
}
