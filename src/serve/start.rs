//! Starting the console (`cairn serve`): the repository and the token are found before
//! listening, so a server started in the wrong place, or asked to listen beyond this machine
//! without a token, fails at once with the fix on stderr. The token file is `--token-file`,
//! else `$CAIRN_CONFIG_DIR/token`, else `$XDG_CONFIG_HOME/cairn/token`, else
//! `~/.config/cairn/token`: outside the repository.

use std::path::PathBuf;

use chrono::{DateTime, Utc};

use crate::cli::serve::Args;
use crate::cli::{Ctx, Served};
use crate::error::{Error, Result};
use crate::output;

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
pub fn start(ctx: &Ctx, args: Args, now: Option<DateTime<Utc>>) -> Result<()> {
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
