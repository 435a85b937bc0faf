//! `cairn eval locomo FILE` and `cairn eval longmemeval FILE`.

use std::path::PathBuf;

use serde_json::json;

use super::Ctx;
use crate::error::{Error, Result};
use crate::eval;
use crate::output::{self, Report};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// LoCoMo (github snap-research/LoCoMo, data/locomo10.json): recall of evidence turns
    Locomo(LocomoArgs),
    /// LongMemEval (github xiaowu0162/LongMemEval): turn- and session-level recall
    Longmemeval(CommonArgs),
}

#[derive(Debug, clap::Args)]
pub struct CommonArgs {
    /// The benchmark file
    pub file: PathBuf,
    /// The cut-offs k, comma-separated
    #[arg(long, value_delimiter = ',', default_value = "1,5,10,20")]
    pub k: Vec<usize>,
    /// Override the observations' decay rate per day (to measure what decay does)
    #[arg(long)]
    pub decay: Option<f64>,
    /// Ranked lists: words, vectors or hybrid [default: from the built-in configuration]
    #[arg(long)]
    pub mode: Option<String>,
    /// Store each turn alone, as EVAL.md's first protocol said, instead of with the turn before
    /// it in its session as its narrative (the default: the context cairn's observers keep
    /// with a fact, the prompt a turn answers)
    #[arg(long, conflicts_with = "previous_turn")]
    pub turn_alone: bool,
    /// Store each turn with the turn before it as its narrative (the default; kept for
    /// scripts that name it)
    #[arg(long, hide = true)]
    pub previous_turn: bool,
    /// How hybrid fuses its lists: standard or rrf [default: from the built-in configuration]
    #[arg(long)]
    pub fusion: Option<String>,
    /// Override `[recall] relevance_cosine`: the cosine a result sharing no word with the
    /// question needs (0 keeps every one)
    #[arg(long)]
    pub relevance_cosine: Option<f64>,
    /// Override `[recall] relevance_soft`: the share of the question's words a result sharing
    /// no word with it must cover by meaning (0 keeps every one)
    #[arg(long)]
    pub relevance_soft: Option<f64>,
    /// Override `[recall] diversity`: MMR's λ over the final list (1 keeps the fused order)
    #[arg(long)]
    pub diversity: Option<f64>,
    /// Override `[recall] time_boost`: the factor for records in the span a question names
    /// (1 is off)
    #[arg(long)]
    pub time_boost: Option<f64>,
    /// Override `[recall] speaker_boost`: the factor for a turn in the words of a person the
    /// question names (1 is off)
    #[arg(long)]
    pub speaker_boost: Option<f64>,
    /// Override `[recall] feedback_docs`: how many of the first round's best records feed a
    /// second round of search (pseudo-relevance feedback; 0 is off)
    #[arg(long, value_name = "N")]
    pub feedback_docs: Option<usize>,
    /// Recall each question as `cairn recall --profile NAME` would: with the query rewrite
    /// when the profile rewrites, through the `[llm]` of the knowledge repository found
    /// (`--repo`, CAIRN_REPO, or the current directory) [default: no rewrite]
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
}

impl CommonArgs {
    fn options(&self, ctx: &Ctx) -> Result<eval::Options> {
        let mode = self
            .mode
            .as_deref()
            .map(crate::recall::Mode::parse)
            .transpose()?;
        if let Some(d) = self.diversity
            && !(0.0..=1.0).contains(&d)
        {
            return Err(Error::bad_input(format!(
                "--diversity {d}: MMR's λ is between 0 and 1 (1 keeps the fused order)"
            )));
        }
        if let Some(b) = self.time_boost
            && !(b.is_finite() && b >= 1.0)
        {
            return Err(Error::bad_input(format!(
                "--time-boost {b}: the factor is 1 (off) or more"
            )));
        }
        if let Some(b) = self.speaker_boost
            && !(b.is_finite() && b >= 1.0)
        {
            return Err(Error::bad_input(format!(
                "--speaker-boost {b}: the factor is 1 (off) or more"
            )));
        }
        if let Some(f) = &self.fusion {
            crate::recall::Fusion::parse(f, crate::config::Recall::default().rrf_k)?;
        }
        Ok(eval::Options {
            decay: self.decay,
            mode,
            previous_turn: !self.turn_alone,
            fusion: self.fusion.clone(),
            relevance_cosine: self.relevance_cosine,
            relevance_soft: self.relevance_soft,
            diversity: self.diversity,
            time_boost: self.time_boost,
            speaker_boost: self.speaker_boost,
            feedback_docs: self.feedback_docs,
            rewrite: self.rewrite(ctx)?,
        })
    }

    /// The rewrite `--profile` asks for, if its profile rewrites.
    fn rewrite(&self, ctx: &Ctx) -> Result<Option<eval::Rewrite>> {
        let Some(name) = &self.profile else {
            return Ok(None);
        };
        let profile = match crate::recall::Profile::choose(name, "", false)? {
            _ if name.trim().eq_ignore_ascii_case("auto") => {
                return Err(Error::bad_input(
                    "--profile auto depends on each question: use lean, balanced or deep",
                ));
            }
            p => p,
        };
        let repo = ctx.repo()?;
        if !profile.rewrites(&repo.config) {
            return Ok(None);
        }
        let llm = &repo.config.llm;
        let settings = crate::provider::http::Settings::within(std::time::Duration::from_millis(
            llm.rewrite_timeout_ms,
        ));
        let client = crate::provider::ChatClient::with_settings(
            llm,
            &settings,
            &crate::provider::http::process_env,
        )?
        .ok_or_else(|| {
            Error::bad_input(format!(
                "--profile {} rewrites through [llm], but {} names no provider",
                profile.as_str(),
                repo.path("cairn.toml").display()
            ))
            .with_fix(
                "set [llm] provider, base_url and model in cairn.toml, or leave out --profile",
            )
        })?;
        Ok(Some(eval::Rewrite { client, profile }))
    }

    fn mode_name(&self) -> String {
        self.mode
            .clone()
            .unwrap_or_else(|| crate::config::Config::default().recall.mode)
    }
}

#[derive(Debug, clap::Args)]
pub struct LocomoArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Only these conversations (sample ids, comma-separated)
    #[arg(long, value_delimiter = ',')]
    pub conversations: Vec<String>,
    /// Also write each question's outcome to FILE, one JSON line each: its conversation,
    /// category, gold ids, the ids recalled and its recall at the largest k (to read the misses)
    #[arg(long, value_name = "FILE")]
    pub per_question: Option<PathBuf>,
}

pub fn run(ctx: &Ctx, cmd: Command) -> Result<Report> {
    match cmd {
        Command::Locomo(args) => locomo(ctx, args),
        Command::Longmemeval(args) => longmemeval(ctx, args),
    }
}

fn path(ctx: &Ctx, p: PathBuf) -> PathBuf {
    if p.is_absolute() { p } else { ctx.cwd.join(p) }
}

fn check_ks(ks: &[usize]) -> Result<()> {
    if ks.is_empty() || ks.contains(&0) {
        return Err(Error::bad_input(
            "--k takes positive cut-offs, e.g. 1,5,10,20",
        ));
    }
    Ok(())
}

fn locomo(ctx: &Ctx, args: LocomoArgs) -> Result<Report> {
    check_ks(&args.common.k)?;
    let file = path(ctx, args.common.file.clone());
    let conversations = eval::locomo::read(&file)?;
    for id in &args.conversations {
        if !conversations.iter().any(|c| &c.id == id) {
            return Err(Error::bad_input(format!(
                "{}: no conversation `{id}`",
                file.display()
            )));
        }
    }
    let total: usize = conversations
        .iter()
        .filter(|c| args.conversations.is_empty() || args.conversations.contains(&c.id))
        .map(|c| c.questions.len())
        .sum();
    // An empty table measures nothing: say why instead of printing one (exit 2).
    if total == 0 {
        return Err(Error::bad_input(format!(
            "{}: no question names an evidence turn the file holds (`qa` with `evidence` ids \
             like D1:3): nothing to measure; is this LoCoMo's data/locomo10.json?",
            file.display()
        )));
    }
    let options = args.common.options(ctx)?;
    let bar = output::progress(total as u64, ctx.interactive, "questions");
    let outcome = eval::locomo::run(
        &conversations,
        &args.conversations,
        &args.common.k,
        &options,
        |n| bar.inc(n as u64),
    )?;
    bar.finish_and_clear();
    if let Some(out) = &args.per_question {
        let out = path(ctx, out.clone());
        let mut text = String::new();
        for q in &outcome.per_question {
            text.push_str(&serde_json::to_string(q).expect("a question's outcome serializes"));
            text.push('\n');
        }
        crate::files::write_atomic(&out, text.as_bytes())?;
    }
    let groups = ["1-4", "1", "2", "3", "4", "5 (adversarial)"];
    let rewrite = options.rewrite.as_ref().map(|rw| {
        let t = &outcome.rewrites;
        json!({
            "profile": rw.profile.as_str(),
            "provider": rw.client.api().name(),
            "model": rw.client.model(),
            "used": t.used,
            "same": t.same,
            "timeout": t.timeout,
            "failed": t.failed,
            "tokens_in": t.tokens_in,
            "tokens_out": t.tokens_out,
        })
    });
    let rewrite_note = options
        .rewrite
        .as_ref()
        .map(|rw| {
            let t = &outcome.rewrites;
            format!(
                ", rewrite by {} {} ({}): {} used, {} same, {} timed out, {} failed",
                rw.client.api().name(),
                rw.client.model(),
                rw.profile.as_str(),
                t.used,
                t.same,
                t.timeout,
                t.failed
            )
        })
        .unwrap_or_default();
    let human = format!(
        "LoCoMo {}: {} ({}), {} ({} skipped without evidence), mode {}{}{}{rewrite_note}\n{}",
        file.display(),
        crate::output::count(outcome.conversations.len(), "conversation"),
        outcome.conversations.join(", "),
        crate::output::count(outcome.questions, "question"),
        outcome.skipped,
        args.common.mode_name(),
        args.common
            .decay
            .map(|d| format!(", decay {d}"))
            .unwrap_or_default()
            + &args
                .common
                .fusion
                .as_ref()
                .map(|f| format!(", fusion {f}"))
                .unwrap_or_default()
            + &args
                .common
                .diversity
                .map(|d| format!(", diversity {d}"))
                .unwrap_or_default()
            + &args
                .common
                .time_boost
                .map(|b| format!(", time boost {b}"))
                .unwrap_or_default()
            + &args
                .common
                .speaker_boost
                .map(|b| format!(", speaker boost {b}"))
                .unwrap_or_default()
            + &args
                .common
                .feedback_docs
                .map(|n| format!(", feedback from {n} records"))
                .unwrap_or_default(),
        if args.common.turn_alone {
            ", each turn alone"
        } else {
            ", each turn with the previous one as narrative"
        },
        outcome.table.render(&groups, &args.common.k)
    ) + &outcome.time.render()
        + &outcome
            .baseline
            .as_ref()
            .map(|t| {
                format!(
                    "\nthe same questions without the rewrite, on the same indexes:\n{}",
                    t.render(&groups, &args.common.k)
                )
            })
            .unwrap_or_default();
    let data = json!({
        "file": file,
        "mode": args.common.mode_name(),
        "decay": args.common.decay,
        "previous_turn": !args.common.turn_alone,
        "fusion": args.common.fusion,
        "diversity": args.common.diversity,
        "time_boost": args.common.time_boost,
        "speaker_boost": args.common.speaker_boost,
        "feedback_docs": args.common.feedback_docs,
        "conversations": outcome.conversations,
        "questions": outcome.questions,
        "skipped": outcome.skipped,
        "rewrite": rewrite,
        "results": outcome.table.means(),
        "baseline": outcome.baseline.as_ref().map(|t| t.means()),
        "time": outcome.time,
    });
    Ok(Report::new("eval_locomo", data, human))
}

fn longmemeval(ctx: &Ctx, args: CommonArgs) -> Result<Report> {
    check_ks(&args.k)?;
    let file = path(ctx, args.file.clone());
    let bar = output::progress(0, ctx.interactive, "questions");
    let options = args.options(ctx)?;
    let outcome = eval::longmemeval::run(&file, &args.k, &options, |n| bar.inc(n as u64))?;
    bar.finish_and_clear();
    if outcome.questions == 0 {
        return Err(Error::bad_input(format!(
            "{}: no question with an evidence session: nothing to measure; is this a \
             LongMemEval file (longmemeval_s.json)?",
            file.display()
        )));
    }
    let human = format!(
        "LongMemEval {}: {}, mode {}\n{}",
        file.display(),
        crate::output::count(outcome.questions, "question"),
        args.mode_name(),
        outcome.table.render(&["session", "turn"], &args.k)
    ) + &outcome.time.render();
    let data = json!({
        "file": file,
        "mode": args.mode_name(),
        "decay": args.decay,
        "questions": outcome.questions,
        "results": outcome.table.means(),
        "time": outcome.time,
    });
    Ok(Report::new("eval_longmemeval", data, human))
}
