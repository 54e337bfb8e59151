//! `simulate plot`: messages per election against N for the three algorithms,
//! like Figure 8 of Soundarabai et al., with Table 1's values marked, as an SVG.

use plotters::coord::types::RangedCoordu64;
use plotters::prelude::*;

use crate::measure::TableRow;
use bully_sim::paper;

/// Classic Bully's colour (vermillion; the three colours stay apart for
/// colour-blind readers).
const CLASSIC: RGBColor = RGBColor(213, 94, 0);
/// Modified Bully's colour (blue).
const MODIFIED: RGBColor = RGBColor(0, 114, 178);
/// The ring's colour (bluish green).
const RING: RGBColor = RGBColor(0, 158, 115);

/// A labelled, coloured series: its legend, its colour, and its value for a row.
type Series<Row> = (&'static str, RGBColor, fn(&Row) -> u64);

/// The process counts the plot measures: 5, 10, ..., 100.
pub fn plot_nodes() -> Vec<u64> {
    (1..=20).map(|step| step * 5).collect()
}

/// Draws the measured `rows` (Table 1's scenario at each N) as an SVG document:
/// one line per algorithm and Table 1's values as circles, on a linear scale as in
/// the paper's Figure 8 (left) and on a logarithmic one, where the two linear
/// algorithms can be told apart (right). Axes labelled.
pub fn messages_svg(rows: &[TableRow]) -> Result<String, Box<dyn std::error::Error>> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1280, 600)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(
            "Messages per election when the lowest of N processes initiates (Soundarabai et al., Table 1 and Figure 8)",
            ("sans-serif", 22),
        )?;
        let (left, right) = root.split_horizontally(640);
        let max_n = rows.iter().map(|row| row.n).max().unwrap_or(10);
        let x_range = 0u64..max_n + max_n / 20;
        let max_messages = rows
            .iter()
            .flat_map(|row| [row.classic.total(), row.modified.total(), row.ring.total()])
            .max()
            .unwrap_or(10);

        let mut linear = ChartBuilder::on(&left)
            .caption("linear scale, like Figure 8", ("sans-serif", 18))
            .margin(20)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(x_range.clone(), 0u64..max_messages + max_messages / 20)?;
        linear
            .configure_mesh()
            .x_desc("processes (N)")
            .y_desc("messages (heartbeats excluded)")
            .axis_desc_style(("sans-serif", 16))
            .label_style(("sans-serif", 13))
            .draw()?;
        draw_series(&mut linear, rows)?;
        linear
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font(("sans-serif", 15))
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.4))
            .draw()?;

        let mut log = ChartBuilder::on(&right)
            .caption("logarithmic scale", ("sans-serif", 18))
            .margin(20)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(x_range, (1u64..max_messages * 2).log_scale())?;
        log.configure_mesh()
            .x_desc("processes (N)")
            .y_desc("messages (heartbeats excluded)")
            .axis_desc_style(("sans-serif", 16))
            .label_style(("sans-serif", 13))
            .draw()?;
        draw_series(&mut log, rows)?;
        log.configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .label_font(("sans-serif", 15))
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.4))
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}

/// The measured lines and Table 1's circles, labelled for the legend.
fn draw_series<Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordu64, Y>>,
    rows: &[TableRow],
) -> Result<(), Box<dyn std::error::Error>>
where
    Y: Ranged<ValueType = u64>,
{
    let series: [Series<TableRow>; 3] = [
        ("classic Bully, measured (N^2-1)", CLASSIC, |row| {
            row.classic.total()
        }),
        ("modified Bully, measured (3N-2)", MODIFIED, |row| {
            row.modified.total()
        }),
        ("ring, measured (4N-2)", RING, |row| row.ring.total()),
    ];
    for (label, color, value) in series {
        chart
            .draw_series(LineSeries::new(
                rows.iter().map(|row| (row.n, value(row))),
                color.stroke_width(2),
            ))?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(2))
            });
    }
    let table: [Series<(u64, u64, u64)>; 2] = [
        ("Table 1, Bully", CLASSIC, |&(_, classic, _)| classic),
        ("Table 1, modified Bully", MODIFIED, |&(_, _, modified)| {
            modified
        }),
    ];
    for (label, color, value) in table {
        chart
            .draw_series(
                paper::TABLE_1
                    .iter()
                    .map(|row| Circle::new((row.0, value(row)), 6, color.stroke_width(2))),
            )?
            .label(label)
            .legend(move |(x, y)| Circle::new((x + 12, y), 6, color.stroke_width(2)));
    }
    Ok(())
}
