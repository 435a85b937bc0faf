//! The console's drawings, as inline SVG made on the server: the supersede graph of the
//! decisions page and the weekly bar charts of the stats page. Pure: values in, markup out.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::html::esc;

/// A record's box in the supersede graph, and the room between columns and lanes.
const BOX_W: u64 = 190;
const BOX_H: u64 = 44;
const COL_GAP: u64 = 48;
const LANE_GAP: u64 = 30;
/// The widest a character of the graph's 11px text is taken to be, in pixels: a title is cut
/// to what fits its box at that width (and the box clips whatever a wider font still spills).
const CHAR_W: u64 = 7;
const PAD: u64 = 8;

/// The supersede graph of `records` (number, title) and `edges` (old, new: `new` supersedes
/// `old`): one band per connected chain, each record in the column of its longest path from
/// the chain's first record, records of the same column in lanes under each other. An arrow
/// between neighbouring columns runs in the gap between them; one that skips columns arcs
/// over the boxes in between, so no arrow crosses a label. Each label is its record's number
/// and as much of its title as fits the box, the whole title in the box's tooltip.
pub fn supersede_graph(records: &BTreeMap<u64, String>, edges: &[(u64, u64)]) -> String {
    let mut edges: Vec<(u64, u64)> = edges.iter().copied().filter(|(a, b)| a != b).collect();
    edges.sort_unstable();
    edges.dedup();
    if edges.is_empty() {
        return String::new();
    }
    // Column: the longest path from a record nothing supersedes (at most one pass per record,
    // so a cycle in bad data ends).
    let mut column: BTreeMap<u64, u64> = BTreeMap::new();
    for &(a, b) in &edges {
        column.entry(a).or_insert(0);
        column.entry(b).or_insert(0);
    }
    for _ in 0..column.len() {
        let mut moved = false;
        for &(a, b) in &edges {
            let want = column[&a] + 1;
            if column[&b] < want && want < column.len() as u64 {
                column.insert(b, want);
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    // Chains: connected parts, each named by its smallest number.
    let mut chain: BTreeMap<u64, u64> = column.keys().map(|&n| (n, n)).collect();
    loop {
        let mut moved = false;
        for &(a, b) in &edges {
            let low = chain[&a].min(chain[&b]);
            for n in [a, b] {
                if chain[&n] != low {
                    chain.insert(n, low);
                    moved = true;
                }
            }
        }
        if !moved {
            break;
        }
    }
    // Places: chains stacked, each as tall as its most crowded column.
    let mut place: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    let mut top = LANE_GAP;
    let mut columns = 0;
    let chains: std::collections::BTreeSet<u64> = chain.values().copied().collect();
    for c in chains {
        let mut lanes: BTreeMap<u64, u64> = BTreeMap::new();
        for (&n, _) in chain.iter().filter(|(_, v)| **v == c) {
            let col = column[&n];
            let lane = lanes.entry(col).or_insert(0);
            place.insert(
                n,
                (col * (BOX_W + COL_GAP), top + *lane * (BOX_H + LANE_GAP)),
            );
            *lane += 1;
            columns = columns.max(col + 1);
        }
        let tallest = lanes.values().copied().max().unwrap_or(1);
        top += tallest * (BOX_H + LANE_GAP);
    }
    let width = columns * (BOX_W + COL_GAP) - COL_GAP + 12;
    let height = top;
    let mut svg = format!(
        "<div class=\"chains\"><h2>Supersede chains</h2><svg id=\"chains\" role=\"img\" aria-label=\"supersede chains\" \
         viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" xmlns=\"http://www.w3.org/2000/svg\">\
         <defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\">\
         <path d=\"M0,0 L10,5 L0,10 z\" fill=\"#5c6773\"/></marker>"
    );
    for (n, (x, y)) in &place {
        let _ = write!(
            svg,
            "<clipPath id=\"clip-{n}\"><rect x=\"{}\" y=\"{y}\" width=\"{}\" height=\"{BOX_H}\"/></clipPath>",
            x + 1,
            BOX_W - 2
        );
    }
    svg.push_str("</defs>");
    for (a, b) in &edges {
        let (Some(&(ax, ay)), Some(&(bx, by))) = (place.get(a), place.get(b)) else {
            continue;
        };
        let d = if column[b] == column[a] + 1 {
            // Neighbours: from the right side's middle to the next column's left side.
            format!(
                "M{},{} L{},{}",
                ax + BOX_W,
                ay + BOX_H / 2,
                bx,
                by + BOX_H / 2
            )
        } else {
            // Skipping columns (or going back, in bad data): over the tops, in the gap above.
            let (sx, ex) = (ax + BOX_W / 2, bx + BOX_W / 2);
            let lift = ay.min(by).saturating_sub(LANE_GAP - 6);
            format!("M{sx},{ay} C{sx},{lift} {ex},{lift} {ex},{by}")
        };
        let _ = write!(
            svg,
            "<path class=\"edge\" d=\"{d}\" fill=\"none\" stroke=\"#5c6773\" marker-end=\"url(#arrow)\"/>"
        );
    }
    let fits = ((BOX_W - 2 * PAD) / CHAR_W) as usize;
    for (n, (x, y)) in &place {
        let title = records.get(n).cloned().unwrap_or_default();
        let _ = write!(
            svg,
            "<a href=\"/decisions/{n}\"><title>ADR {n}: {}</title>\
             <rect x=\"{x}\" y=\"{y}\" width=\"{BOX_W}\" height=\"{BOX_H}\" rx=\"5\" fill=\"#f6f8fa\" stroke=\"#0b5cad\"/>\
             <g clip-path=\"url(#clip-{n})\" font-size=\"11\" fill=\"#1d232b\">\
             <text x=\"{tx}\" y=\"{}\" font-weight=\"bold\">ADR {n}</text>\
             <text x=\"{tx}\" y=\"{}\">{}</text></g></a>",
            esc(&title),
            y + 17,
            y + 33,
            esc(&cut(&title, fits)),
            tx = x + PAD,
        );
    }
    svg.push_str("</svg></div>");
    svg
}

/// `text` cut to `max` characters, `…` last when it was cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out = out.trim_end().to_string();
    out.push('…');
    out
}

/// A weekly series as an SVG bar chart: each bar with its value over it and its ISO week
/// under it (`W49`), the value and week in its tooltip too; a series with nothing in its weeks
/// says so in words rather than draw an empty frame.
pub fn bar_chart(id: &str, name: &str, values: &[(String, u64)]) -> String {
    let total: u64 = values.iter().map(|(_, v)| *v).sum();
    let max = values.iter().map(|(_, v)| *v).max().unwrap_or(0).max(1);
    let (bar, gap, height, top) = (26u64, 6u64, 100u64, 14u64);
    let width = values.len() as u64 * (bar + gap) + gap;
    let mut out = format!(
        "<figure class=\"chart\" id=\"chart-{id}\" data-total=\"{total}\"><figcaption>{}</figcaption>",
        esc(name),
    );
    if total == 0 {
        let _ = write!(
            out,
            "<p class=\"empty meta\">none in these {} weeks</p>",
            values.len()
        );
    }
    let _ = write!(
        out,
        "<svg viewBox=\"0 0 {width} {h}\" width=\"{width}\" height=\"{h}\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" aria-label=\"{}\">",
        esc(name),
        h = top + height + 16,
    );
    for (i, (week, v)) in values.iter().enumerate() {
        let h = v * height / max;
        let x = gap + i as u64 * (bar + gap);
        let short = week.rsplit_once('-').map(|(_, w)| w).unwrap_or(week);
        let _ = write!(
            out,
            "<g class=\"bar\" data-week=\"{w}\" data-value=\"{v}\"><title>{w}: {v}</title>\
             <rect x=\"{x}\" y=\"{}\" width=\"{bar}\" height=\"{h}\" fill=\"#0b5cad\"/>",
            top + height - h,
            w = esc(week),
        );
        if *v > 0 {
            let _ = write!(
                out,
                "<text class=\"value\" x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\" fill=\"#1d232b\">{v}</text>",
                x + bar / 2,
                top + height - h - 3,
            );
        }
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" font-size=\"9\" text-anchor=\"middle\" fill=\"#5c6773\">{}</text></g>",
            x + bar / 2,
            top + height + 12,
            esc(short)
        );
    }
    out.push_str("</svg></figure>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_title_is_cut_to_its_box() {
        let records: BTreeMap<u64, String> = [
            (1, "Use NFS v4".to_string()),
            (
                2,
                "Use NFS v4.2 with pNFS and a much longer title than fits".to_string(),
            ),
        ]
        .into();
        let svg = supersede_graph(&records, &[(1, 2)]);
        let fits = ((BOX_W - 2 * PAD) / CHAR_W) as usize;
        let cut_title = cut(&records[&2], fits);
        assert!(cut_title.ends_with('…') && cut_title.chars().count() <= fits);
        assert!(
            svg.contains(&format!(">{}</text>", esc(&cut_title))),
            "{svg}"
        );
        // The whole title stays in the tooltip.
        assert!(svg.contains(&format!("<title>ADR 2: {}</title>", esc(&records[&2]))));
    }

    #[test]
    fn a_record_sits_in_the_column_of_its_longest_path() {
        let records = BTreeMap::new();
        // 1 → 2 → 3 and 1 → 3: 3 is in column 2, and the 1 → 3 arrow arcs over 2.
        let svg = supersede_graph(&records, &[(1, 2), (2, 3), (1, 3)]);
        let step = BOX_W + COL_GAP;
        assert!(
            svg.contains(&format!(
                "<a href=\"/decisions/3\"><title>ADR 3: </title><rect x=\"{}\"",
                2 * step
            )),
            "{svg}"
        );
        assert_eq!(svg.matches(" C").count(), 1, "{svg}");
    }

    #[test]
    fn bars_carry_their_values_and_an_empty_series_says_so() {
        let chart = bar_chart(
            "cards",
            "turn cards",
            &[("2026-W48".into(), 0), ("2026-W49".into(), 7)],
        );
        assert!(
            chart.contains(">7</text>") && chart.contains(">W49</text>"),
            "{chart}"
        );
        assert!(!chart.contains("none in these"));
        let empty = bar_chart("cards", "turn cards", &[("2026-W49".into(), 0)]);
        assert!(empty.contains("none in these 1 weeks"), "{empty}");
    }
}
