//! The page: HTML5 with one `<style>`, the tables as `<table>` (floats shown with four
//! significant digits as the terminal table shows them, the exact value in the cell's `title`),
//! the figures as inline SVG, the comparisons as preformatted text. No script, no external
//! resource: the page reads the same offline, from a file, in any browser.

use std::fmt::Write;

use super::{Contents, Section};
use crate::output::table::format_number;

/// The page's style: readable widths, tables that scroll sideways rather than overflow, figures
/// scaled to the column.
const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:72rem;\
padding:0 1rem;color:#222}h1{font-size:1.6rem}h2{margin-top:2.5rem;border-bottom:1px solid #ccc}\
nav ul{columns:3;font-size:.9rem}pre{background:#f6f6f6;padding:.6rem;overflow-x:auto;\
font-size:.8rem}pre.cmd{background:#eef3f8}div.table{overflow-x:auto;max-height:32rem;\
overflow-y:auto}table{border-collapse:collapse;font-size:.8rem}th,td{padding:.15rem .5rem;\
border-bottom:1px solid #e4e4e4;white-space:nowrap}th{position:sticky;top:0;background:#fff;\
text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}figure{margin:1rem 0}\
figure svg{max-width:100%;height:auto}";

/// The whole page.
pub fn page(c: &Contents) -> String {
    let mut out =
        String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
    out += "<title>lbsim: the reproduction</title>\n";
    let _ = writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>");
    out += "<h1>lbsim: every table of the reproduction</h1>\n";
    let _ = writeln!(
        out,
        "<p>Numbers {}. Times are in mean service times of a rate-1 server. Each table is \
         followed by the command that regenerates it; the comparisons at the end set the \
         article's numbers, the closed forms and the books' claims beside lbsim's.</p>",
        escape(&c.origin)
    );
    out += "<nav><ul>\n";
    for s in &c.sections {
        let _ = writeln!(out, "<li><a href=\"#{0}\">{0}</a></li>", escape(&s.stem));
    }
    for (i, (title, _)) in c.comparisons.iter().enumerate() {
        let _ = writeln!(out, "<li><a href=\"#cmp-{i}\">{}</a></li>", escape(title));
    }
    out += "</ul></nav>\n";
    for s in &c.sections {
        section(&mut out, s);
    }
    for (i, (title, body)) in c.comparisons.iter().enumerate() {
        let _ = writeln!(out, "<section id=\"cmp-{i}\">\n<h2>{}</h2>", escape(title));
        let _ = writeln!(out, "<pre>{}</pre>\n</section>", escape(body));
    }
    out += "</body>\n</html>\n";
    out
}

/// One command's section: title, command, figures, table.
fn section(out: &mut String, s: &Section) {
    let _ = writeln!(out, "<section id=\"{0}\">\n<h2>{0}</h2>", escape(&s.stem));
    let _ = writeln!(out, "<pre class=\"cmd\">$ {}</pre>", escape(&s.line));
    for svg in &s.figures {
        let _ = writeln!(out, "<figure>{}</figure>", inline_svg(svg));
    }
    out.push_str(&table(&s.csv));
    out.push_str("</section>\n");
}

/// An SVG file as an element of the page: without its XML declaration.
fn inline_svg(svg: &str) -> &str {
    let svg = svg.trim();
    match svg.strip_prefix("<?xml") {
        Some(rest) => rest.split_once("?>").map_or(svg, |(_, body)| body.trim_start()),
        None => svg,
    }
}

/// A CSV as an HTML table (a CSV that does not parse is shown as text).
fn table(csv: &str) -> String {
    let mut reader = ::csv::ReaderBuilder::new().flexible(true).from_reader(csv.as_bytes());
    let Ok(header) = reader.headers().cloned() else {
        return format!("<pre>{}</pre>\n", escape(csv));
    };
    let mut out = String::from("<div class=\"table\"><table>\n<thead><tr>");
    for h in &header {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out += "</tr></thead>\n<tbody>\n";
    for record in reader.records() {
        let Ok(record) = record else { continue };
        out += "<tr>";
        for cell in &record {
            out += &td(cell);
        }
        out += "</tr>\n";
    }
    out += "</tbody></table></div>\n";
    out
}

/// One cell: a float with four significant digits (its full value in `title`), an integer as
/// it is, text escaped.
fn td(cell: &str) -> String {
    let float = cell.contains(['.', 'e', 'E']) || cell.eq_ignore_ascii_case("nan");
    match cell.parse::<f64>() {
        Ok(x) if float => {
            format!("<td class=\"n\" title=\"{}\">{}</td>", escape(cell), format_number(x))
        }
        Ok(_) => format!("<td class=\"n\">{}</td>", escape(cell)),
        Err(_) => format!("<td>{}</td>", escape(cell)),
    }
}

/// Text safe inside an element or a quoted attribute.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(ch),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_tables_and_figures_are_written_safely() {
        assert_eq!(td("2.634289723"), "<td class=\"n\" title=\"2.634289723\">2.634</td>");
        assert_eq!(td("103"), "<td class=\"n\">103</td>");
        assert_eq!(td("a<b"), "<td>a&lt;b</td>");
        let t = table("policy,mean\n\"p2c,x\",0.5\n");
        assert!(t.contains("<th>policy</th>") && t.contains("<td>p2c,x</td>"), "{t}");
        assert_eq!(inline_svg("<?xml version=\"1.0\"?>\n<svg x=\"1\"/>"), "<svg x=\"1\"/>");
        assert_eq!(inline_svg("<svg/>"), "<svg/>");
    }

    #[test]
    fn the_page_links_every_section_and_loads_nothing() {
        let c = Contents {
            origin: "read from results".into(),
            sections: vec![Section {
                stem: "homo".into(),
                line: "lbsim homo".into(),
                csv: "a\n1\n".into(),
                figures: vec!["<svg xmlns=\"http://www.w3.org/2000/svg\"/>".into()],
            }],
            comparisons: vec![("article vs lbsim".into(), "x < y".into())],
        };
        let p = page(&c);
        assert!(p.contains("href=\"#homo\"") && p.contains("id=\"homo\""));
        assert!(p.contains("href=\"#cmp-0\"") && p.contains("x &lt; y"));
        assert!(!p.contains("<script") && !p.contains("src=") && !p.contains("<link"));
    }
}
