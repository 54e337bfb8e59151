//! Markdown tables and the statistics they print.

use std::time::Duration;

/// A markdown table built row by row.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names.
    pub fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as markdown.
    pub fn markdown(&self) -> String {
        let mut s = format!("| {} |\n|", self.header.join(" | "));
        for _ in &self.header {
            s.push_str("---|");
        }
        s.push('\n');
        for r in &self.rows {
            s.push_str(&format!("| {} |\n", r.join(" | ")));
        }
        s
    }
}

/// The median (lower middle) of values; `None` for none.
pub fn median<T: Copy + PartialOrd>(values: &[T]) -> Option<T> {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).expect("comparable"));
    v.get(v.len().saturating_sub(1) / 2).copied()
}

/// The median (lower middle) of times, a missing one (never) counting as later
/// than any; `None` if the median is a missing one.
pub fn median_or_never(values: &[Option<Duration>]) -> Option<Duration> {
    let mut v: Vec<Duration> = values.iter().map(|d| d.unwrap_or(Duration::MAX)).collect();
    v.sort();
    v.get(v.len().saturating_sub(1) / 2)
        .copied()
        .filter(|&d| d != Duration::MAX)
}

/// The largest value.
pub fn max<T: Copy + PartialOrd>(values: &[T]) -> Option<T> {
    values.iter().copied().fold(None, |m, x| match m {
        Some(m) if m >= x => Some(m),
        _ => Some(x),
    })
}

/// Milliseconds with one decimal.
pub fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

/// An integer with thousands separators.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `value / reference` as "×r", or "–" when there is no reference.
pub fn ratio(value: f64, reference: Option<f64>) -> String {
    match reference {
        Some(r) if r > 0.0 => {
            let x = value / r;
            if x >= 10.0 {
                format!("×{x:.0}")
            } else if x >= 0.1 {
                format!("×{x:.2}")
            } else {
                format!("×{x:.4}")
            }
        }
        _ => "–".to_string(),
    }
}
