//! A [`Trace`] for a person: one line a step, in the pipeline's order.

use super::{
    CardTrace, GateCheck, LibraryTrace, NoteTrace, ObservationTrace, OtherTrace, QueryStanding,
    Score, Trace,
};
use crate::recall::Standing;

/// The trace as lines a person reads.
pub fn render(t: &Trace) -> String {
    let mut out = format!(
        "\"{}\" (looked up as {})\n",
        t.target,
        match t.by {
            "id" => "an id",
            _ => "a text",
        }
    );
    if !t.found.is_empty() {
        out.push_str("held by:\n");
        for f in &t.found {
            let how = match (f.how, f.similarity) {
                ("meaning", Some(s)) => format!("nearest by meaning, cosine {s:.3}"),
                ("exact", _) => "exact match".to_string(),
                (other, _) => other.to_string(),
            };
            out.push_str(&format!(
                "  {} {} ({how}; {}): {}\n",
                f.kind,
                f.id,
                f.at,
                one_line(&f.text, 100)
            ));
        }
    }
    if t.found_total > t.found.len() {
        out.push_str(&format!(
            "  and {} more (`cairn search --exact` lists them all)\n",
            t.found_total - t.found.len()
        ));
    }
    for m in &t.merged_away {
        out.push_str(&format!(
            "dedup: {} was never stored: merged into {} at {} ({})\n",
            m.from, m.into, m.ts, m.at
        ));
    }
    if let Some(g) = &t.gate {
        out.push_str(&format!("gate, on this text as given: {}\n", gate_line(g)));
    }
    if let Some(w) = &t.would_merge {
        out.push_str(&format!(
            "dedup, on this text as given: a new copy would merge into {} (cosine {:.3} over {})\n",
            w.into, w.similarity, w.threshold
        ));
    }
    for c in &t.cards {
        out.push_str(&card(c));
    }
    for o in &t.observations {
        out.push_str(&observation(o, t));
    }
    for o in &t.others {
        out.push_str(&other(o));
    }
    if let Some(n) = &t.note {
        out.push_str(&note(n));
    }
    if let Some(l) = &t.library {
        out.push_str(&library(l));
    }
    for p in &t.proposals {
        out.push_str(&format!(
            "proposal {}: {} ({}): {}\n",
            p.id,
            state(p),
            p.section,
            one_line(&p.text, 80)
        ));
    }
    out
}

fn card(c: &CardTrace) -> String {
    let mut out = format!(
        "turn card {} ({}): {} session {}, turn {}, {}, {}\n",
        c.id, c.at, c.agent, c.session, c.turn, c.ts, c.outcome
    );
    out.push_str(&format!("  asked: {}\n", one_line(&c.asked, 100)));
    if c.transcripts.is_empty() {
        out.push_str("  transcript: not known here (.cairn/sessions.json has no path for it)\n");
    }
    for p in &c.transcripts {
        out.push_str(&format!(
            "  transcript: {} ({})\n",
            p.path,
            if p.exists { "still there" } else { "gone" }
        ));
    }
    if c.observed.is_empty() {
        out.push_str("  observer: not read yet (`cairn observe --all`)\n");
    }
    for o in &c.observed {
        out.push_str(&format!("  observer: {} read it at {}\n", o.observer, o.ts));
    }
    if !c.observed.is_empty() {
        out.push_str(&match c.extracted.len() {
            0 => "  extracted: nothing from this turn\n".to_string(),
            _ => format!("  extracted: {}\n", c.extracted.join(", ")),
        });
    }
    if c.trivial {
        out.push_str("  trivial turn: recalled only with --include-hold\n");
    }
    out.push_str(&format!("  {}\n", score_line(&c.score)));
    if let Some(q) = &c.query {
        out.push_str(&query_line(q));
    }
    out
}

fn observation(o: &ObservationTrace, t: &Trace) -> String {
    let mut out = format!(
        "observation {} ({}): {}\n",
        o.id,
        o.at,
        one_line(&o.text, 100)
    );
    match (&o.card, &o.session_id) {
        (Some(card), _) if t.cards.iter().any(|c| c.id == *card) => {
            let c = t.cards.iter().find(|c| c.id == *card).expect("found above");
            out.push_str(&format!(
                "  from: turn {} of {} session {} (card {card})\n",
                c.turn, c.agent, c.session
            ));
        }
        (Some(card), _) => out.push_str(&format!("  from: card {card} (no longer ingested)\n")),
        (None, Some(s)) => out.push_str(&format!("  from: {} (session {s})\n", o.source)),
        (None, None) => out.push_str(&format!("  from: {}\n", o.source)),
    }
    out.push_str(&format!("  gate: {}\n", gate_line(&o.gate)));
    out.push_str(&format!(
        "  category: {} (confidence {:.2}, taxonomy v{}); type {}, priority {}\n",
        o.category, o.category_confidence, o.taxonomy_version, o.observation_type, o.priority
    ));
    let merges = o
        .events
        .iter()
        .filter(|e| e.op == crate::store::Op::Merge)
        .count();
    out.push_str(&format!(
        "  dedup: merged count {}{}\n",
        o.merged_count,
        if merges > 0 {
            format!(
                " (absorbed {})",
                o.events
                    .iter()
                    .filter(|e| e.op == crate::store::Op::Merge)
                    .map(|e| format!("{} at {}", e.from.as_deref().unwrap_or("a copy"), e.ts))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            String::new()
        }
    ));
    out.push_str(&format!("  state: {}", o.state.as_str()));
    if let Some(by) = &o.superseded_by {
        out.push_str(&format!(", superseded by {by}"));
    }
    out.push('\n');
    for e in o.events.iter().filter(|e| e.op != crate::store::Op::Merge) {
        let op = serde_json::to_value(e.op)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let by =
            e.by.as_deref()
                .map(|b| format!(" by {b}"))
                .unwrap_or_default();
        out.push_str(&format!("  event: {op}{by} at {} ({})\n", e.ts, e.at));
    }
    match &o.last_recall {
        Some(last) if o.recalls > 0 => out.push_str(&format!(
            "  recalled: {}, last {last}\n",
            crate::output::count(o.recalls, "time")
        )),
        _ => out.push_str("  recalled: never\n"),
    }
    out.push_str(&format!("  {}\n", score_line(&o.score)));
    if let Some(q) = &o.query {
        out.push_str(&query_line(q));
    }
    if o.proposals.is_empty() {
        out.push_str("  proposals: none cites it\n");
    }
    for p in &o.proposals {
        out.push_str(&format!(
            "  proposal {}: {} ({}): {}\n",
            p.id,
            state(p),
            p.section,
            one_line(&p.text, 80)
        ));
    }
    for m in &o.memory {
        let how = if m.how == "exact" {
            "holds its text".to_string()
        } else {
            format!("from proposal {}", m.how)
        };
        out.push_str(&format!(
            "  MEMORY.md:{} ({how}): {}\n",
            m.line,
            one_line(&m.text, 80)
        ));
    }
    out
}

fn other(o: &OtherTrace) -> String {
    let mut out = format!("{} {}\n  {}\n", o.kind.as_str(), o.id, score_line(&o.score));
    if let Some(q) = &o.query {
        out.push_str(&query_line(q));
    }
    out
}

fn commit_line(c: &crate::git::PathCommit) -> String {
    format!(
        "{} {} {}",
        c.commit,
        &c.time.get(..10).unwrap_or(&c.time),
        c.subject
    )
}

fn note(n: &NoteTrace) -> String {
    let mut out = format!("note {} ({}): {}\n", n.id, n.at, one_line(&n.title, 100));
    match &n.url {
        Some(u) => out.push_str(&format!("  from: {u}\n")),
        None => out.push_str("  from: a text note (no URL)\n"),
    }
    out.push_str(&format!(
        "  captured: {}{}\n",
        if n.captured.is_empty() {
            "(no date in its frontmatter)"
        } else {
            &n.captured
        },
        n.session
            .as_ref()
            .map(|s| format!(", by session {s}"))
            .unwrap_or_default()
    ));
    if !n.relevance.is_empty() {
        out.push_str(&format!(
            "  why it mattered: {}\n",
            one_line(&n.relevance, 100)
        ));
    }
    if !n.tags.is_empty() {
        out.push_str(&format!("  tags: {}\n", n.tags.join(", ")));
    }
    match &n.added_in {
        Some(c) => out.push_str(&format!("  added in: {}\n", commit_line(c))),
        None => out.push_str("  added in: no commit yet\n"),
    }
    if let Some(c) = &n.changed_in {
        out.push_str(&format!("  last changed in: {}\n", commit_line(c)));
    }
    if n.uncommitted {
        out.push_str("  the file differs from HEAD's (edited and not committed)\n");
    }
    out.push_str(&format!("  {}\n", score_line(&n.score)));
    if let Some(q) = &n.query {
        out.push_str(&query_line(q));
    }
    out
}

fn library(l: &LibraryTrace) -> String {
    let mut out = String::new();
    if let Some(c) = &l.chunk {
        out.push_str(&format!(
            "library chunk {} (chunk {} of {}): {}\n",
            c.id,
            c.n + 1,
            l.chunks,
            c.cite
        ));
    }
    let pages = l.pages.map(|p| format!(", {p} pages")).unwrap_or_default();
    out.push_str(&format!(
        "document {}: {} ({}{pages}){}\n",
        l.document,
        l.title,
        serde_json::to_value(l.format)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        if l.copied { ", a copy committed" } else { "" }
    ));
    out.push_str(&format!(
        "  from: {} ({})\n",
        l.source,
        match l.document_now {
            "as read" => "the file is as it was read",
            "changed since" =>
                "the file changed since it was read: `cairn library add` reads it again",
            "missing" => "the file is gone: its chunks stay searchable until it is removed",
            _ => "a URL, not fetched by why",
        }
    ));
    out.push_str(&format!(
        "  added: {}, sha256 {}\n",
        l.added,
        &l.sha256[..l.sha256.len().min(12)]
    ));
    if !l.tags.is_empty() {
        out.push_str(&format!("  tags: {}\n", l.tags.join(", ")));
    }
    match &l.added_in {
        Some(c) => out.push_str(&format!("  added in: {}\n", commit_line(c))),
        None => out.push_str("  added in: no commit yet\n"),
    }
    if let Some(c) = &l.chunk {
        out.push_str(&format!("  {}\n", score_line(&c.score)));
        if let Some(q) = &c.query {
            out.push_str(&query_line(q));
        }
    }
    out
}

fn state(p: &super::ProposalRef) -> String {
    let state = serde_json::to_value(p.state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let mut s = state;
    if let Some(tier) = p.tier {
        s.push_str(&format!(" by {tier}"));
    }
    if !p.reason.is_empty() {
        s.push_str(&format!(": {}", p.reason));
    }
    if let Some(c) = &p.commit {
        s.push_str(&format!(", commit {}", &c[..c.len().min(8)]));
    }
    s
}

fn gate_line(g: &GateCheck) -> String {
    let mut s = format!(
        "{} (confidence {:.2}), rule: {}",
        g.verdict.as_str(),
        g.confidence,
        g.says
    );
    if g.from == "re-run" {
        s.push_str(" [the record keeps the verdict, not the rule: named by re-running the rules]");
    }
    if let Some(stored) = g.stored {
        s.push_str(&format!(
            "; stored as {} (the rules or their settings changed since)",
            stored.as_str()
        ));
    }
    s
}

fn score_line(s: &Score) -> String {
    let age = if s.rate == 0.0 {
        format!(
            "age {:.1} days, {} does not decay",
            s.age_days,
            s.kind.as_str()
        )
    } else {
        format!(
            "age decay {:.4} ({:.1} days at {}/day)",
            s.time_decay, s.age_days, s.rate
        )
    };
    let stale = if s.stale_factor != 1.0 {
        format!(" × stale {}", s.stale_factor)
    } else {
        String::new()
    };
    let indexed = if s.indexed { "" } else { "; not in the index" };
    format!("score now: decay {:.4} = {age}{stale}{indexed}", s.decay)
}

fn query_line(q: &QueryStanding) -> String {
    let mut out = match &q.standing {
        Standing::Ranked {
            rank,
            relevant,
            limit,
            result,
        } => format!(
            "  query \"{}\": rank {rank} of {relevant} relevant results ({} the cap of {limit}); \
             score {:.4}\n",
            q.query,
            if rank <= limit { "inside" } else { "outside" },
            result.score
        ),
        Standing::NotRelevant { position, read, .. } => format!(
            "  query \"{}\": read at {position} of {read}, but not relevant\n",
            q.query
        ),
        Standing::NotRead { depth } => format!(
            "  query \"{}\": in none of the lists recall reads ({depth} deep)\n",
            q.query
        ),
        Standing::NoWords => format!("  query \"{}\": no word to match\n", q.query),
    };
    if q.recalled {
        out.push_str("    recalled for it\n");
    }
    for w in &q.why_not {
        out.push_str(&format!("    not recalled: {w}\n"));
    }
    out
}

/// `text` on one line, cut at `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::cards::cut(&joined, max)
}
