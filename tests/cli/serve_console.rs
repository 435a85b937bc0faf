//! The console's pages through the real binary and real HTTP (issue 32 item 14): a turn opened
//! by the number its card carries (after a forgotten turn too) with the link's `#turn-N`, the
//! kind filter's notes and library, `/favicon.ico`, and the stats page's charts (values, the
//! window that shows old sessions' cards, the names of what they count).

use crate::support::*;

fn get(url: &str) -> (u16, String, String) {
    let r = client().get(url).send().unwrap();
    let kind = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (r.status().as_u16(), kind, r.text().unwrap())
}

const SESSION: &str = "vault/sessions/claude/9eda1058-9706-484a-b992-d03f9cfa2546.jsonl";

#[test]
fn serve_opens_the_turn_its_card_names_after_a_forgotten_turn() {
    let (env, repo) = Env::repo();
    let t = crate::serve::hostile_transcript(&env);
    env.cairn_in(&repo, &["sessions", "ingest", t.to_str().unwrap()])
        .code(0);
    let first = read(&repo, SESSION)
        .lines()
        .find(|l| l.starts_with("{\"type\":\"card\"") && l.contains("\"turn\":1,"))
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .expect("turn 1's card");
    env.cairn_in(&repo, &["forget", "--yes", &first]).code(0);
    let s = serve(&env, &repo, &[]);
    let (code, _, page) = get(&format!("{}/?q=explore%20repo&kind=card", s.url));
    assert_eq!(code, 200, "{page}");
    let open = page
        .split("href=\"/turn?")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .replace("&amp;", "&");
    // The link names the turn and scrolls to it.
    assert!(open.ends_with("&turn=2#turn-2"), "{open}");
    let (code, _, turn) = get(&format!(
        "{}/turn?{}",
        s.url,
        open.split('#').next().unwrap()
    ));
    assert_eq!(code, 200, "{turn}");
    assert!(turn.contains("Turn 2 of 3"), "{turn}");
    assert!(
        turn.contains("<article class=\"turn current\" id=\"turn-2\" data-turn=\"2\">"),
        "{turn}"
    );
    assert!(
        turn.contains("explore more"),
        "turn 2's prompt is not shown: {turn}"
    );
    // The last turn is still there, by its number.
    let (code, _, last) = get(&format!("{}/turns?file={SESSION}&from=3&to=3", s.url));
    assert_eq!(code, 200, "{last}");
    assert!(last.contains("id=\"turn-3\""), "{last}");
}

#[test]
fn serve_kind_filter_has_notes_and_library_and_favicon_is_served() {
    let (env, repo) = Env::repo();
    env.cairn_in(
        &repo,
        &[
            "note",
            "the nfs gateway drops idle leases after ten minutes",
        ],
    )
    .code(0);
    let s = serve(&env, &repo, &[]);
    let (code, _, page) = get(&format!("{}/?q=leases&kind=note", s.url));
    assert_eq!(code, 200, "{page}");
    assert!(
        page.contains("<option value=\"note\" selected>notes</option>"),
        "{page}"
    );
    assert!(
        page.contains("<option value=\"library\">library</option>"),
        "{page}"
    );
    assert!(
        page.contains("data-kind=\"note\""),
        "the note is not found: {page}"
    );
    let (code, _, page) = get(&format!("{}/?q=leases&kind=library", s.url));
    assert_eq!(code, 200, "{page}");
    assert!(
        page.contains("<option value=\"library\" selected>"),
        "{page}"
    );
    let (code, kind, icon) = get(&format!("{}/favicon.ico", s.url));
    assert_eq!(code, 200);
    assert_eq!(kind, "image/svg+xml");
    assert!(icon.starts_with("<svg"), "{icon}");
    assert!(
        page.contains("<link rel=\"icon\" href=\"/favicon.ico\""),
        "{page}"
    );
}

#[test]
fn serve_stats_page_charts_old_cards_with_their_values() {
    let (env, repo) = Env::repo();
    let t = crate::serve::hostile_transcript(&env);
    env.cairn_in(&repo, &["sessions", "ingest", t.to_str().unwrap()])
        .code(0);
    // The session's turns are of 2026-01-11: outside 8 weeks of June, inside 26.
    let s = serve_with(&env, &repo, &[], |c| {
        c.env("CAIRN_NOW", "2026-06-01T12:00:00Z");
    });
    let (code, _, page) = get(&format!("{}/stats", s.url));
    assert_eq!(code, 200, "{page}");
    assert!(!page.contains("by the day written"), "{page}");
    assert!(page.contains("<strong>26 weeks</strong>"), "{page}");
    assert!(
        page.contains("per ISO week (Monday to Sunday, UTC), 2025-W50 to 2026-W23"),
        "{page}"
    );
    let cards = page
        .split("id=\"chart-cards\"")
        .nth(1)
        .and_then(|r| r.split("</figure>").next())
        .unwrap();
    assert!(cards.starts_with(" data-total=\"3\""), "{cards}");
    assert!(
        cards.contains("data-week=\"2026-W02\" data-value=\"3\""),
        "{cards}"
    );
    assert!(
        cards.contains(">3</text>"),
        "no value over the bar: {cards}"
    );
    // Asked for 8 weeks: the cards chart says it has none.
    let (code, _, eight) = get(&format!("{}/stats?weeks=8", s.url));
    assert_eq!(code, 200);
    assert!(eight.contains("none in these 8 weeks"), "{eight}");
    let (code, _, bad) = get(&format!("{}/stats?weeks=0", s.url));
    assert_eq!(code, 400, "{bad}");
    assert!(bad.contains("`weeks` must be 1 to 104"), "{bad}");
}
