//! The report's charts as inline SVG, written by hand: horizontal bars,
//! lines, points, a SHAP summary and a drawn tree. Every mark carries its
//! number in a `data-` attribute, so a test (or a reader's script) can
//! check what is drawn against what was computed.

use std::fmt::Write;

/// Escapes text for HTML and SVG content and attributes.
pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A number for people: four significant digits, whole numbers as they are.
pub(crate) fn number(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || (x.fract() == 0.0 && x.abs() < 1e6) {
        return format!("{x}");
    }
    let magnitude = x.abs().log10().floor() as i32;
    if !(-4..6).contains(&magnitude) {
        return format!("{x:.3e}");
    }
    let decimals = (3 - magnitude).max(0) as usize;
    format!("{x:.decimals$}")
}

/// A colour from blue (0) through purple to red (1), as `shap.summary_plot` shades feature values.
pub(crate) fn heat(t: f64) -> String {
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.5 };
    let (r, g, b) = (30.0 + 225.0 * t, 136.0 - 100.0 * t, 229.0 - 170.0 * t);
    format!("rgb({},{},{})", r as u8, g as u8, b as u8)
}

/// Linear map of `[lo, hi]` onto `[a, b]` (the middle when the range is empty).
fn scale(x: f64, (lo, hi): (f64, f64), (a, b): (f64, f64)) -> f64 {
    if hi > lo {
        a + (x - lo) / (hi - lo) * (b - a)
    } else {
        (a + b) / 2.0
    }
}

/// The smallest and largest finite value of `values`.
pub(crate) fn range(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)))
}

/// Horizontal bars, one per `(label, value)`, longest for the largest value.
pub(crate) fn bars(items: &[(String, f64)]) -> String {
    let (label_width, bar_width, row) = (200.0, 420.0, 22.0);
    let max = items.iter().map(|(_, v)| v.abs()).fold(0.0, f64::max);
    let height = row * items.len() as f64 + 10.0;
    let mut svg =
        format!(r#"<svg class="bars" width="{}" height="{height}" role="img">"#, label_width + bar_width + 80.0);
    for (i, (label, value)) in items.iter().enumerate() {
        let y = 5.0 + row * i as f64;
        let width = if max > 0.0 { value.abs() / max * bar_width } else { 0.0 };
        let _ = write!(
            svg,
            r##"<text x="{}" y="{}" text-anchor="end" class="label">{}</text><rect class="bar" x="{label_width}" y="{y}" width="{width:.2}" height="{}" fill="#4c78a8" data-name="{}" data-value="{value}"/><text x="{}" y="{}" class="value">{}</text>"##,
            label_width - 6.0,
            y + 14.0,
            escape(label),
            row - 6.0,
            escape(label),
            label_width + width + 4.0,
            y + 14.0,
            number(*value)
        );
    }
    svg.push_str("</svg>");
    svg
}

/// The plot area shared by line and point charts: 560 by 300 with margins.
struct Frame {
    x: (f64, f64),
    y: (f64, f64),
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 360.0;
const LEFT: f64 = 70.0;
const BOTTOM: f64 = 310.0;
const TOP: f64 = 20.0;
const RIGHT: f64 = 620.0;

impl Frame {
    fn px(&self, x: f64) -> f64 {
        scale(x, self.x, (LEFT, RIGHT))
    }

    fn py(&self, y: f64) -> f64 {
        scale(y, self.y, (BOTTOM, TOP))
    }

    /// The axes with their end values and names.
    fn axes(&self, svg: &mut String, x_name: &str, y_name: &str) {
        let _ = write!(
            svg,
            r##"<line x1="{LEFT}" y1="{BOTTOM}" x2="{RIGHT}" y2="{BOTTOM}" stroke="#888"/><line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{BOTTOM}" stroke="#888"/><text x="{LEFT}" y="{}" class="tick">{}</text><text x="{RIGHT}" y="{}" text-anchor="end" class="tick">{}</text><text x="{}" y="{BOTTOM}" text-anchor="end" class="tick">{}</text><text x="{}" y="{}" text-anchor="end" class="tick">{}</text><text x="{}" y="{}" text-anchor="middle" class="axis">{}</text><text x="14" y="{}" text-anchor="middle" class="axis" transform="rotate(-90 14 {})">{}</text>"##,
            BOTTOM + 16.0,
            number(self.x.0),
            BOTTOM + 16.0,
            number(self.x.1),
            LEFT - 4.0,
            number(self.y.0),
            LEFT - 4.0,
            TOP + 10.0,
            number(self.y.1),
            (LEFT + RIGHT) / 2.0,
            BOTTOM + 38.0,
            escape(x_name),
            (TOP + BOTTOM) / 2.0,
            (TOP + BOTTOM) / 2.0,
            escape(y_name)
        );
    }
}

/// Colours of successive lines.
const PALETTE: [&str; 10] =
    ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac", "#eeca3b"];

/// A dashed guide line drawn under a chart's lines.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Guide {
    /// No guide.
    None,
    /// The line y = x (ROC curves).
    Diagonal,
    /// A vertical line at this x (the round early stopping kept).
    AtX(f64),
}

/// Lines through `(x, y)` points, one per named series, with a legend when
/// there are several, over a dashed `guide`.
pub(crate) fn lines(series: &[(String, Vec<(f64, f64)>)], x_name: &str, y_name: &str, guide: Guide) -> String {
    let points = || series.iter().flat_map(|(_, p)| p.iter());
    let frame = Frame { x: range(points().map(|p| p.0)), y: range(points().map(|p| p.1)) };
    let mut svg = format!(r#"<svg class="lines" width="{WIDTH}" height="{HEIGHT}" role="img">"#);
    frame.axes(&mut svg, x_name, y_name);
    let ends = match guide {
        Guide::None => None,
        Guide::Diagonal => {
            let (a, b) = (frame.x.0.max(frame.y.0), frame.x.1.min(frame.y.1));
            Some(((a, a), (b, b)))
        }
        Guide::AtX(x) => Some(((x, frame.y.0), (x, frame.y.1))),
    };
    if let Some(((x1, y1), (x2, y2))) = ends {
        let _ = write!(
            svg,
            r##"<line class="guide" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#bbb" stroke-dasharray="4 4"/>"##,
            frame.px(x1),
            frame.py(y1),
            frame.px(x2),
            frame.py(y2)
        );
    }
    for (i, (name, points)) in series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let path: Vec<String> = points.iter().map(|&(x, y)| format!("{:.1},{:.1}", frame.px(x), frame.py(y))).collect();
        let _ = write!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}" data-name="{}"/>"#,
            path.join(" "),
            escape(name)
        );
        if series.len() > 1 {
            let y = TOP + 14.0 * i as f64;
            let _ = write!(
                svg,
                r#"<rect x="{}" y="{}" width="10" height="10" fill="{colour}"/><text x="{}" y="{}" class="tick">{}</text>"#,
                RIGHT - 120.0,
                y,
                RIGHT - 106.0,
                y + 9.0,
                escape(name)
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

/// Points `(x, y)` with the line y = x, for predictions against labels.
pub(crate) fn points(points: &[(f64, f64)], x_name: &str, y_name: &str) -> String {
    let all = range(points.iter().flat_map(|p| [p.0, p.1]));
    let frame = Frame { x: all, y: all };
    let mut svg = format!(r#"<svg class="points" width="{WIDTH}" height="{HEIGHT}" role="img">"#);
    frame.axes(&mut svg, x_name, y_name);
    let _ = write!(
        svg,
        r##"<line x1="{LEFT}" y1="{BOTTOM}" x2="{RIGHT}" y2="{TOP}" stroke="#bbb" stroke-dasharray="4 4"/>"##
    );
    for &(x, y) in points {
        let _ = write!(
            svg,
            r##"<circle cx="{:.1}" cy="{:.1}" r="2" fill="#4c78a8" fill-opacity="0.4"/>"##,
            frame.px(x),
            frame.py(y)
        );
    }
    svg.push_str("</svg>");
    svg
}

/// A feature's row of the SHAP summary: its name and, per explained row,
/// the contribution and the feature's value (`None`: missing or categorical).
pub(crate) type ShapRow = (String, Vec<(f64, Option<f64>)>);

/// A SHAP summary: one row per feature, a dot per sampled row at its
/// contribution, coloured by the rank of the feature's value among the
/// rows (blue low, red high, grey missing: a rank, so that a few extreme
/// values do not wash the rest into one colour), spread vertically so dense
/// places show their density.
pub(crate) fn shap_summary(rows: &[ShapRow]) -> String {
    let (label_width, plot_width, row) = (200.0, 400.0, 36.0);
    let x = range(rows.iter().flat_map(|(_, p)| p.iter().map(|d| d.0)));
    let x = (x.0.min(0.0), x.1.max(0.0));
    let height = row * rows.len() as f64 + 30.0;
    let mut svg =
        format!(r#"<svg class="shap" width="{}" height="{height}" role="img">"#, label_width + plot_width + 20.0);
    let zero = scale(0.0, x, (label_width, label_width + plot_width));
    let _ = write!(svg, r##"<line x1="{zero:.1}" y1="0" x2="{zero:.1}" y2="{}" stroke="#bbb"/>"##, height - 24.0);
    for (i, (name, dots)) in rows.iter().enumerate() {
        let centre = 16.0 + row * i as f64;
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="end" class="label">{}</text>"#,
            label_width - 8.0,
            centre + 4.0,
            escape(name)
        );
        let mut sorted: Vec<f64> = dots.iter().filter_map(|d| d.1).collect();
        sorted.sort_by(f64::total_cmp);
        let rank = |v: f64| sorted.partition_point(|&s| s < v) as f64 / (sorted.len().max(2) - 1) as f64;
        for (k, &(contribution, value)) in dots.iter().enumerate() {
            // A fixed spread by the row's position: the same page for the same data.
            let jitter = ((k * 7919) % 29) as f64 / 28.0 - 0.5;
            let colour = value.map_or("#999".to_owned(), |v| heat(rank(v)));
            let _ = write!(
                svg,
                r#"<circle cx="{:.1}" cy="{:.1}" r="2.2" fill="{colour}" fill-opacity="0.7"/>"#,
                scale(contribution, x, (label_width, label_width + plot_width)),
                centre + jitter * (row - 12.0)
            );
        }
    }
    let _ = write!(
        svg,
        r#"<text x="{label_width}" y="{}" class="tick">{}</text><text x="{}" y="{}" text-anchor="end" class="tick">{}</text>"#,
        height - 8.0,
        number(x.0),
        label_width + plot_width,
        height - 8.0,
        number(x.1)
    );
    svg.push_str("</svg>");
    svg
}

/// A drawn tree: `nodes` as `(depth, label, is_leaf)` in depth-first order
/// (left before right), and `edges` as `(parent, child, label)`. Leaves take
/// successive columns; a split sits above the middle of its leaves.
pub(crate) fn tree(nodes: &[(usize, String, bool)], edges: &[(usize, usize, String)]) -> String {
    let (column, level, box_w, box_h) = (120.0, 84.0, 112.0, 36.0);
    // What fits a box: about 18 characters of the 11-pixel font.
    let fit = |label: &str| match label.chars().count() > 19 {
        true => label.chars().take(18).collect::<String>() + "…",
        false => label.to_owned(),
    };
    let mut x = vec![0.0; nodes.len()];
    let mut next_leaf = 0.0;
    // Children come after their parent in depth-first order: place the leaves, then each
    // split over its children, from the last node up.
    for (i, (_, _, leaf)) in nodes.iter().enumerate() {
        if *leaf {
            x[i] = next_leaf * column + column / 2.0;
            next_leaf += 1.0;
        }
    }
    for i in (0..nodes.len()).rev() {
        if !nodes[i].2 {
            let children: Vec<f64> = edges.iter().filter(|e| e.0 == i).map(|e| x[e.1]).collect();
            x[i] = children.iter().sum::<f64>() / children.len().max(1) as f64;
        }
    }
    let depth = nodes.iter().map(|n| n.0).max().unwrap_or(0) as f64;
    let width = (next_leaf * column).max(column);
    let height = (depth + 1.0) * level + 10.0;
    let y = |d: usize| 5.0 + d as f64 * level;
    let mut svg = format!(r#"<svg class="tree" width="{width}" height="{height}" role="img">"#);
    for (parent, child, label) in edges {
        let (x1, y1, x2, y2) = (x[*parent], y(nodes[*parent].0) + box_h, x[*child], y(nodes[*child].0));
        let _ = write!(
            svg,
            r##"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="#999"/><text x="{:.1}" y="{:.1}" text-anchor="middle" class="edge">{}</text>"##,
            (x1 + x2) / 2.0,
            (y1 + y2) / 2.0,
            escape(label)
        );
    }
    for (i, (d, label, leaf)) in nodes.iter().enumerate() {
        let fill = if *leaf { "#eef3f8" } else { "#fff" };
        let _ = write!(
            svg,
            r##"<rect x="{:.1}" y="{:.1}" width="{box_w}" height="{box_h}" rx="6" fill="{fill}" stroke="#4c78a8"/><text x="{:.1}" y="{:.1}" text-anchor="middle" class="node">{}</text>"##,
            x[i] - box_w / 2.0,
            y(*d),
            x[i],
            y(*d) + box_h / 2.0 + 4.0,
            escape(&fit(label))
        );
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_are_as_long_as_their_values() {
        let svg = bars(&[("a".into(), 2.0), ("b<".into(), 1.0)]);
        assert!(svg.contains(r##"width="420.00" height="16" fill="#4c78a8" data-name="a" data-value="2""##), "{svg}");
        assert!(svg.contains(r#"width="210.00""#) && svg.contains("b&lt;"), "{svg}");
    }

    #[test]
    fn numbers_keep_four_significant_digits() {
        assert_eq!(number(0.123456), "0.1235");
        assert_eq!(number(1234.5678), "1235");
        assert_eq!(number(12.0), "12");
        assert_eq!(number(12.5), "12.50");
        assert_eq!(number(1e-7), "1.000e-7");
    }
}
