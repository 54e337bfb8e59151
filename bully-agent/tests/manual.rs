//! The man pages in `doc/` are the command line's own help rendered by
//! clap_mangen (`bully-agent.1`, and one page per command, `bully-agent-run.1`
//! ...): this test fails when they differ. To write them again after changing
//! the command line, run
//! `BULLY_WRITE_MANUAL=1 cargo test -p bully-agent --test manual`.

use clap::CommandFactory;

fn render(command: clap::Command) -> String {
    let mut rendered = Vec::new();
    clap_mangen::Man::new(command)
        .render(&mut rendered)
        .expect("render the man page");
    String::from_utf8(rendered).expect("roff is text")
}

#[test]
fn the_man_pages_are_the_help_rendered() {
    let command = bully_agent::cli::Cli::command();
    let mut pages = vec![("bully-agent.1".to_owned(), render(command.clone()))];
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        let name = format!("bully-agent-{}", sub.get_name());
        // clap takes a 'static name (without its "string" feature).
        let static_name: &'static str = Box::leak(name.clone().into_boxed_str());
        pages.push((format!("{name}.1"), render(sub.clone().name(static_name))));
    }
    for section in ["RELOAD", "KEYS", "SIGNALS", "FILES", "EXIT STATUS"] {
        assert!(pages[0].1.contains(section), "the manual lacks {section}");
    }
    assert!(
        pages
            .iter()
            .any(|(name, page)| name == "bully-agent-run.1" && page.contains("\\-\\-config"))
    );
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("doc");
    for (name, rendered) in pages {
        let path = dir.join(&name);
        if std::env::var_os("BULLY_WRITE_MANUAL").is_some() {
            std::fs::write(&path, &rendered).expect("write the man page");
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == rendered,
            "{} is not the help rendered: run BULLY_WRITE_MANUAL=1 cargo test -p bully-agent --test manual",
            path.display()
        );
    }
}
