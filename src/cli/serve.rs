//! `cairn serve`'s arguments; the console starts in `serve::start` (a front end beside this
//! one, which `cairn::run` hands the command to).

use std::net::IpAddr;
use std::path::PathBuf;

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
