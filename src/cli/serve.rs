//! `cairn serve`: the console and its JSON API on a local port ([`crate::serve`]).
//!
//! This finds the repository and the token before listening, so a server started in the
//! wrong place, or asked to listen beyond this machine without a token, fails at once with
//! the fix on stderr. The token file is `--token-file`, else `$CAIRN_CONFIG_DIR/token`, else
//! `$XDG_CONFIG_HOME/cairn/token`, else `~/.config/cairn/token`: outside the repository.

use std::net::IpAddr;
use std::path::PathBuf;

use chrono::{DateTime, Utc};

use super::{Ctx, Served};
use crate::error::{Error, Result};
use crate::output;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The port to listen on; 0 takes any free port (the URL on stdout's first line says which)
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// The address to listen on; one other than loopback needs --token-file
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDRESS")]
    pub bind: IpAddr,
    /// The file holding the token (made, mode 600, when missing) [default:
    /// $CAIRN_CONFIG_DIR/token, else $XDG_CONFIG_HOME/cairn/token, else ~/.config/cairn/token]
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Open the console in a browser once it listens ($BROWSER, else xdg-open or open)
    #[arg(long)]
    pub open: bool,
    #[command(flatten)]
    pub commit: super::CommitArgs,
}

/// The token file when none is given.
fn default_token_file() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = var("CAIRN_CONFIG_DIR") {
        return Some(dir.join("token"));
    }
    if let Some(dir) = var("XDG_CONFIG_HOME") {
        return Some(dir.join("cairn").join("token"));
    }
    var("HOME").map(|home| home.join(".config").join("cairn").join("token"))
}

/// Serves until the process is stopped.
pub fn run(ctx: &Ctx, args: Args, now: Option<DateTime<Utc>>) -> Result<()> {
    let repo = ctx.repo()?;
    if !args.bind.is_loopback() && args.token_file.is_none() {
        return Err(Error::bad_input(format!(
            "listening on {} reaches beyond this machine, and needs a token",
            args.bind
        ))
        .with_fix("give --token-file FILE (made, mode 600, when missing), or --bind 127.0.0.1"));
    }
    let path = match args.token_file.clone().or_else(default_token_file) {
        Some(path) => path,
        None => {
            return Err(Error::bad_input("no place for the token: HOME is not set")
                .with_fix("give --token-file FILE outside the repository"));
        }
    };
    let token = crate::serve::auth::load_or_make(&path, repo.root())?;
    if token.made {
        output::notice(&format!(
            "made the console's token in {} (mode 600), shown this once: {}",
            path.display(),
            token.value
        ));
    }
    let served = Served::new(ctx, &repo, now);
    crate::serve::serve(
        served,
        crate::serve::Options {
            bind: args.bind,
            port: args.port,
            token: token.value,
            open: args.open,
        },
    )
}
