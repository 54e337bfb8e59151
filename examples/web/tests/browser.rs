//! The page in a real headless Chromium (Debian's `chromium` and
//! `chromium-driver`), driven over WebDriver as a teacher and a student use it:
//! Soundarabai et al.'s N = 10 election from process 4 (51 messages, equation
//! (3)) and its modified count beside the paper's equation (1), the coordinator
//! crashed by a click, a scenario saved, reloaded and shared; bad links and
//! files answered in plain words inside the window while the page keeps
//! working; the freeze guard, timed; the keyboard alone crashing and reviving a
//! process; axe-core's accessibility check; a download and upload round trip;
//! the split brain without a quorum and its disappearance with one; the module
//! served compressed; and the smaller things a class sees (steps, labels, the
//! legend, the favicon).
//!
//! It also takes the README's screenshots (`BULLY_WEB_SCREENSHOTS=1` writes
//! `docs/web-simulator.png` and `docs/web-simulator-split-brain.png`) and
//! measures the frame rate while N = 64 animate (printed, not asserted: speed
//! is a benchmark, not a test). See `support` for the harness.

mod support;

use std::time::Duration;

use bully_web::{MAX_TIME_US, site};
use fantoccini::key::Key;
use serde_json::{Value, json};
use support::{Page, axe_source, key, one_at_a_time, repository_root};

async fn set_speed(page: &Page, delays_per_second: f64) {
    page.client
        .execute(
            "document.getElementById('speed').value = arguments[0];",
            vec![json!(delays_per_second)],
        )
        .await
        .unwrap();
}

/// Frames per second over 3 s, and the most messages drawn in one frame.
async fn frame_rate(page: &Page) -> (f64, u64) {
    let measured = page
        .client
        .execute_async(
            "const done = arguments[arguments.length - 1];
             let frames = 0, most = 0;
             const start = performance.now();
             function count() {
               frames++;
               most = Math.max(most, window.bully.drawn());
               if (performance.now() - start < 3000) requestAnimationFrame(count);
               else done({ frames, ms: performance.now() - start, most, costs: window.bully.costs() });
             }
             window.bully.costs();
             requestAnimationFrame(count);",
            vec![],
        )
        .await
        .unwrap();
    let fps = measured["frames"].as_f64().unwrap() * 1000.0 / measured["ms"].as_f64().unwrap();
    println!("  ms per refresh, by part: {}", measured["costs"]);
    (fps, measured["most"].as_u64().unwrap())
}

fn screenshot(png: &[u8], name: &str) {
    let target = site::crate_dir().join("target").join(name);
    std::fs::write(&target, png).unwrap();
    if std::env::var_os("BULLY_WEB_SCREENSHOTS").is_some() {
        std::fs::write(repository_root().join("docs").join(name), png).unwrap();
    }
}

/// Nothing sticks out sideways in the 1400-pixel-wide window.
async fn fits(page: &Page) {
    let wide = page
        .js("const width = document.documentElement.clientWidth;
             const found = [...document.querySelectorAll('body *')]
               .filter(e => e.getBoundingClientRect().right > width + 1)
               .map(e => `${e.tagName}#${e.id}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`)
               .slice(0, 5);
             const scroll = document.documentElement.scrollWidth;
             if (scroll > width) found.push(`the page scrolls sideways: ${scroll} > ${width}`);
             return found;")
        .await;
    assert_eq!(wide, json!([]), "wider than the window");
}

/// The explanation box's rows: (source, formula, value) as shown.
async fn formula_rows(page: &Page) -> Vec<(String, String, String)> {
    let rows = page
        .js(
            "return [...document.querySelectorAll('#explain tr.formula-row')].map(r =>
               [r.querySelector('.source').textContent, r.querySelector('.formula').textContent,
                r.querySelector('td').textContent]);",
        )
        .await;
    rows.as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let cell = |i: usize| row[i].as_str().unwrap().to_owned();
            (cell(0), cell(1), cell(2))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teacher_runs_soundarabai_figure_3_crashes_the_coordinator_and_shares_the_scenario() {
    let _one = one_at_a_time().await;
    let page = Page::start("teacher").await;

    // Soundarabai et al.'s Figure 3: ten processes, 4 calls the election.
    page.new_cluster(10, "classic").await;
    page.type_into("initiators", "4").await;
    page.click("elect").await;
    assert!(
        page.process_class(4).await.contains("initiator"),
        "4 is green"
    );
    page.click("run-end").await;
    assert_eq!(page.text("total").await, "51");
    assert_eq!(page.count("Election").await, "21");
    assert_eq!(page.count("Answer").await, "21");
    assert_eq!(page.count("Coordinator").await, "9");
    assert_eq!(page.text("coordinator").await, "10");
    assert!(page.process_class(10).await.contains("crowned"));
    assert!(
        page.text("explain-title")
            .await
            .contains("Table 1's setting")
    );
    let rows = formula_rows(&page).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (rows[0].0.as_str(), rows[0].2.as_str()),
        ("Soundarabai et al., equation (3)", "51")
    );

    // The modified algorithm, same setting: 25 measured, equation (1) says 22,
    // and the page says why.
    page.choose("algorithm", "modified").await;
    page.click("elect").await;
    page.click("run-end").await;
    assert_eq!(page.text("total").await, "25");
    assert_eq!(page.text("coordinator").await, "10");
    let rows = formula_rows(&page).await;
    assert_eq!(rows[0].0, "Soundarabai et al., equation (1)");
    assert_eq!(rows[0].1, "2(N − P) + N");
    assert!(rows[0].2.starts_with("≠ 22"), "{rows:?}");
    assert_eq!(
        (rows[1].1.as_str(), rows[1].2.as_str()),
        ("3N − P − 1", "25")
    );
    let why = page.text("explain-why").await;
    assert!(
        why.contains("P − 1 = 3 Elections") && why.contains("Figure 6"),
        "{why}"
    );

    // Crash the coordinator with a click, 4 notices: its own formula.
    page.click_process(10).await;
    assert!(page.process_class(10).await.contains("down"));
    page.mode("notice").await;
    page.click_process(4).await;
    page.click("run-end").await;
    assert_eq!(page.text("coordinator").await, "9");
    assert_eq!(page.text("total").await, "23");
    assert!(
        page.text("explain-title")
            .await
            .contains("coordinator crashed")
    );
    let rows = formula_rows(&page).await;
    assert_eq!(rows.last().unwrap().1, "3N − P − 3");
    assert!(page.process_class(9).await.contains("crowned"));
    assert!(!page.process_class(10).await.contains("crowned"));

    // Save, reload the page, load: the same state.
    page.click("save").await;
    let saved = page.frame().await;
    let shared = page.client.current_url().await.unwrap().to_string();
    assert!(
        shared.contains("#s="),
        "the link carries the scenario: {shared}"
    );
    page.open(&page.base).await;
    assert_eq!(page.text("coordinator").await, "none", "a fresh page");
    page.click("load").await;
    page.settled_loading().await;
    assert_eq!(page.frame().await, saved);
    assert_eq!(page.text("coordinator").await, "9");
    // The shared link opens the same state in a new visit.
    page.open(&shared).await;
    assert_eq!(page.frame().await, saved);

    // The README's picture: 4's election, paused as 10 announces itself.
    page.open(&page.base).await;
    page.new_cluster(10, "classic").await;
    page.click("elect").await;
    let mut announcing = false;
    for _ in 0..60 {
        page.click("step").await;
        let frame = page.frame().await;
        let flights = frame["flights"].as_array().unwrap();
        if flights.iter().any(|m| m["kind"] == "Coordinator") {
            announcing = true;
            break;
        }
    }
    assert!(announcing, "10 announces within 60 messages");
    // Half a message time on: the announcements halfway to their addressees.
    page.click("half").await;
    let frame = page.frame().await;
    let halfway = frame["flights"].as_array().unwrap().iter().all(|m| {
        let (sent, arrives) = (
            m["sent_us"].as_u64().unwrap(),
            m["arrives_us"].as_u64().unwrap(),
        );
        let now = frame["now_us"].as_u64().unwrap();
        sent < now && now < arrives
    });
    assert!(halfway, "every message drawn on its way: {frame}");
    page.js("document.activeElement.blur()").await;
    screenshot(
        &page.client.screenshot().await.unwrap(),
        "web-simulator.png",
    );

    // Frame rate with 64 processes on the page: requestAnimationFrame callbacks
    // counted over 3 s of wall time while the page's own rAF loop advances the
    // simulation, reads a frame from the module and redraws, every frame. First
    // while all 64 boot at once (thousands of Elections and Answers in flight,
    // played slowly so the 3 s stay inside the storm), then in the steady state
    // (the leader's heartbeats).
    page.new_cluster(64, "classic").await;
    page.click("start-all").await;
    set_speed(&page, 0.5).await;
    page.click("play").await;
    let (fps, most) = frame_rate(&page).await;
    println!("N = 64, all booting: {fps:.1} frames/s, up to {most} messages in flight");
    page.click("run-end").await;
    set_speed(&page, 2.0).await;
    page.click("play").await;
    let (fps, most) = frame_rate(&page).await;
    println!("N = 64, steady heartbeats: {fps:.1} frames/s, up to {most} messages in flight");
    page.click("play").await;
    let (fps, _) = frame_rate(&page).await;
    println!("N = 64, paused (the browser's own rate here): {fps:.1} frames/s");
    page.click("run-end").await;
    assert_eq!(page.text("coordinator").await, "64");
    assert_eq!(page.text("violations").await, "0");
    page.close().await;
}

/// A scenario link for `scenario`'s JSON.
fn link(page: &Page, scenario: &str) -> String {
    let mut encoded = String::new();
    for byte in scenario.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    format!("{}#s={encoded}", page.base)
}

/// After a bad way in: the error beside its control and in the window, a fresh
/// ten-process cluster drawn, and Play moving the clock.
async fn answered_and_working(page: &Page, expected: &str, what: &str) {
    let (notice, visible) = page.notice().await;
    assert!(visible, "{what}: the notice is inside the window");
    assert!(notice.contains(expected), "{what}: {notice}");
    let beside = page.text("scenario-error").await;
    assert_eq!(
        beside, notice,
        "{what}: the same words next to the scenario controls"
    );
    assert_eq!(
        page.process_attr(10, "aria-label").await,
        "process 10, follower, term 0",
        "{what}: a working cluster"
    );
    let moved = page.play_briefly().await;
    assert!(moved > 0.0, "{what}: Play moves the clock");
    assert_eq!(page.text("play-label").await, "Play");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_links_and_files_are_answered_in_plain_words_and_the_page_keeps_working() {
    let _one = one_at_a_time().await;
    let page = Page::start("bad-links").await;
    let good = r#"{"version":1,"settings":{"n":10,"algorithm":"classic"},"actions":[{"at_us":0,"do":"elect","node":4}],"now_us":200000}"#;
    let bad_links = [
        (format!("{}#s=garbage", page.base), "not JSON", "garbage"),
        (
            link(&page, &good[..60]),
            "stops in the middle",
            "a truncated scenario",
        ),
        (
            link(&page, &good.replace("\"n\":10", "\"n\":1000")),
            "N = 1000: this page draws 2 to 64 processes",
            "n = 1000",
        ),
        (
            format!("{}#s=%E0%A4%A", page.base),
            "a %-escape in it does not decode",
            "a malformed URI",
        ),
        (
            link(&page, &good.replace("\"node\":4", "\"node\":70")),
            "there is no process 70",
            "a process that does not exist",
        ),
        (
            link(&page, &good.replace("\"version\":1", "\"version\":9")),
            "this page reads version 1",
            "a newer version",
        ),
    ];
    for (url, expected, what) in &bad_links {
        page.open(url).await;
        answered_and_working(&page, expected, what).await;
        assert!(
            page.notice()
                .await
                .0
                .ends_with("A fresh cluster is shown instead."),
            "{what}"
        );
    }

    // The same for files: not a scenario, and one cut off.
    page.open(&page.base).await;
    let folder = page.downloads.join("bad");
    std::fs::create_dir_all(&folder).unwrap();
    let picture = folder.join("holiday.json");
    std::fs::write(&picture, [0x89, b'P', b'N', b'G', 0, 1, 2]).unwrap();
    page.upload("upload", &picture).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    answered_and_working(
        &page,
        "The file holiday.json: This is not a scenario",
        "a binary file",
    )
    .await;
    let cut = folder.join("cut.json");
    std::fs::write(&cut, &good[..50]).unwrap();
    page.upload("upload", &cut).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    answered_and_working(
        &page,
        "The file cut.json: The text stops in the middle",
        "a cut file",
    )
    .await;

    // Pasted text.
    page.type_into("scenario", "{\"settings\": {\"n\": 5}}")
        .await;
    page.click("load").await;
    answered_and_working(
        &page,
        "The pasted scenario: \"now_us\" is missing",
        "pasted",
    )
    .await;

    // A good link still loads after all that.
    page.open(&link(&page, good)).await;
    assert_eq!(page.text("coordinator").await, "10");
    assert_eq!(page.notice().await.0, "");

    // Fields: the error next to the field and in the window; the cluster stays.
    page.enter_field("n", "1000").await;
    assert_eq!(page.text("n-error").await, "N = 1000: choose 2 to 64.");
    assert_eq!(page.process_attr(10, "aria-invalid").await, "");
    assert_eq!(
        page.js("return document.getElementById('n').getAttribute('aria-invalid')")
            .await,
        "true"
    );
    let (notice, visible) = page.notice().await;
    assert!(
        visible && notice.contains("N = 1000: choose 2 to 64"),
        "{notice}"
    );
    assert_eq!(
        page.text("coordinator").await,
        "10",
        "the cluster is unchanged"
    );
    page.enter_field("n", "10").await;
    page.enter_field("seed", "abc").await;
    assert_eq!(
        page.text("seed-error").await,
        "Seed: \"abc\" is not a whole number: type 0 to 9007199254740991."
    );
    page.enter_field("seed", "0").await;
    assert_eq!(page.text("seed-error").await, "");
    page.type_into("initiators", "").await;
    page.click("elect").await;
    assert_eq!(
        page.text("initiators-error").await,
        "Initiators: type the processes that call the election, e.g. 4 or 1, 3."
    );
    assert!(page.play_briefly().await > 0.0);
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_freeze_guard_refuses_1e10_us_at_once_and_replays_the_longest_scenario_in_slices() {
    let _one = one_at_a_time().await;
    let page = Page::start("freeze").await;
    // Before the guard, a saved time of 1e10 µs froze the page for 6 to 11 s.
    let frozen = r#"{"version":1,"settings":{"n":64,"algorithm":"classic"},"actions":[{"at_us":0,"do":"start_all"}],"now_us":10000000000}"#;
    page.type_into("scenario", frozen).await;
    let ms = page
        .js("const t = performance.now();
             document.getElementById('load').click();
             return performance.now() - t;")
        .await
        .as_f64()
        .unwrap();
    println!("a scenario at 1e10 µs refused in {ms:.1} ms");
    let (notice, visible) = page.notice().await;
    // T_M: one message time, the longest a message takes (20 ms).
    assert!(
        visible && notice.contains("the page's clock stops at 20000 T_M"),
        "{notice}"
    );
    // Generous for a loaded 2-core machine, and far below the freeze it guards.
    assert!(ms < 1000.0, "refused in {ms} ms");

    // The longest scenario the page takes: 64 processes, lossy links, 20,000
    // message times. It replays in slices between frames.
    let longest = format!(
        r#"{{"version":1,"settings":{{"n":64,"algorithm":"classic","loss_percent":5}},"actions":[{{"at_us":0,"do":"start_all"}}],"now_us":{MAX_TIME_US}}}"#
    );
    page.type_into("scenario", &longest).await;
    let first = page
        .js("const t = performance.now();
             document.getElementById('load').click();
             return performance.now() - t;")
        .await
        .as_f64()
        .unwrap();
    page.settled_loading().await;
    let loads = page.js("return window.bully.loads()").await;
    let load = loads.as_array().unwrap().last().unwrap().clone();
    let (slices, longest_ms, total_ms) = (
        load["slices"].as_u64().unwrap(),
        load["longest_slice_ms"].as_f64().unwrap(),
        load["ms"].as_f64().unwrap(),
    );
    println!(
        "20,000 T_M at N = 64 replayed in {total_ms:.0} ms, {slices} slices, the longest {longest_ms:.1} ms (the click: {first:.1} ms)"
    );
    assert!(slices > 10, "{slices} slices");
    assert!(
        longest_ms < 1000.0 && first < 1000.0,
        "{longest_ms} / {first} ms"
    );
    assert_eq!(page.text("now").await, "20000.00");
    // At the end of the page's clock, Play stops and says why.
    page.click("play").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(page.text("play-label").await, "Play");
    assert!(
        page.text("stage-error")
            .await
            .contains("clock stops at 20000 T_M")
    );
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_keyboard_alone_elects_crashes_and_revives_a_process() {
    let _one = one_at_a_time().await;
    let page = Page::start("keyboard").await;
    // From the top of the page, Tab reaches "Call election" and then process 1.
    page.js("document.activeElement.blur(); window.focus();")
        .await;
    let mut presses = 0;
    while page.focused().await != "elect" {
        page.client
            .active_element()
            .await
            .unwrap()
            .send_keys(&key(Key::Tab))
            .await
            .unwrap();
        presses += 1;
        assert!(presses < 40, "Tab reaches Call election");
    }
    page.press(&key(Key::Enter)).await;
    page.press("e").await; // run to the end
    assert_eq!(page.text("coordinator").await, "10");
    while !page.focused().await.starts_with("process 1,") {
        page.press(&key(Key::Tab)).await;
        presses += 1;
        assert!(presses < 80, "Tab reaches the processes");
    }
    assert_eq!(page.focused().await, "process 1, follower, term 1");
    page.press(&key(Key::Tab)).await;
    assert_eq!(
        page.focused().await,
        "process 2, follower, term 1",
        "in id order"
    );
    // Left from 1 wraps to 10, the leader.
    page.press(&key(Key::Left)).await;
    page.press(&key(Key::Left)).await;
    assert_eq!(page.focused().await, "process 10, leader, term 1");
    // Enter crashes it (the selected click action), "e" runs to the end: 9 leads.
    page.press(&key(Key::Enter)).await;
    assert_eq!(page.focused().await, "process 10, crashed");
    page.press("e").await;
    assert_eq!(page.text("coordinator").await, "9");
    // Space revives it; it takes over again.
    page.press(" ").await;
    page.press("e").await;
    assert_eq!(page.text("coordinator").await, "10");
    assert!(page.focused().await.starts_with("process 10, leader, term"));

    // Space outside buttons and fields plays and pauses; "s" steps.
    page.js("document.activeElement.blur()").await;
    let before = page.now_tm().await;
    page.client
        .find(fantoccini::Locator::Css("body"))
        .await
        .unwrap()
        .send_keys(" ")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(page.text("play-label").await, "Pause");
    page.press("p").await;
    assert_eq!(page.text("play-label").await, "Play");
    assert!(page.now_tm().await > before);
    // The shortcuts are shown in the page.
    let keys = page.text("keys").await;
    for shown in ["Space", "step one message", "run to the end", "reset"] {
        assert!(keys.contains(shown), "{shown} in {keys}");
    }
    page.close().await;
}

/// axe-core's violations of impact serious or critical on the page as it is.
async fn serious_violations(page: &Page, axe: &str) -> Vec<Value> {
    page.js(axe).await;
    let found = page
        .client
        .execute_async(
            "const done = arguments[arguments.length - 1];
             axe.run(document, { resultTypes: ['violations'] })
               .then(r => done(r.violations.map(v => ({ id: v.id, impact: v.impact,
                 nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5), help: v.help }))))
               .catch(e => done([{ id: 'axe failed', impact: 'critical', help: String(e) }]));",
            vec![],
        )
        .await
        .unwrap();
    let all = found.as_array().unwrap().clone();
    for violation in &all {
        println!("  axe: {violation}");
    }
    all.into_iter()
        .filter(|v| v["impact"] == "serious" || v["impact"] == "critical")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn axe_core_finds_no_serious_or_critical_violations() {
    let _one = one_at_a_time().await;
    let axe = axe_source();
    let page = Page::start("axe").await;
    // A fresh page; after an election with its explanation; with an error shown;
    // with 64 processes.
    assert_eq!(serious_violations(&page, &axe).await, Vec::<Value>::new());
    page.click("elect").await;
    page.click("run-end").await;
    assert_eq!(serious_violations(&page, &axe).await, Vec::<Value>::new());
    page.enter_field("n", "abc").await;
    assert_eq!(serious_violations(&page, &axe).await, Vec::<Value>::new());
    page.enter_field("n", "64").await;
    page.click("start-all").await;
    page.click("run-end").await;
    assert_eq!(serious_violations(&page, &axe).await, Vec::<Value>::new());
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenario_downloads_as_a_versioned_file_and_uploads_to_the_same_state() {
    let _one = one_at_a_time().await;
    let page = Page::start("files").await;
    page.new_cluster(8, "modified").await;
    page.click("elect").await;
    page.click("step").await;
    page.mode("crash").await;
    page.click_process(8).await;
    page.click("run-end").await;
    let saved = page.frame().await;
    page.click("download").await;
    let file = page.downloaded().await;
    let text = std::fs::read_to_string(&file).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["version"], 1);
    assert_eq!(json["settings"]["n"], 8);
    assert_eq!(json["settings"]["algorithm"], "modified");
    assert!(
        text.starts_with("{\n  \"version\": 1,"),
        "indented, version first"
    );
    println!("downloaded {}", file.display());

    page.open(&page.base).await;
    assert_eq!(page.frame().await["nodes"].as_array().unwrap().len(), 10);
    page.upload("upload", &file).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    page.settled_loading().await;
    assert_eq!(page.frame().await, saved);
    assert_eq!(
        page.js("return document.getElementById('algorithm').value")
            .await,
        "modified"
    );
    assert!(page.text("status").await.contains("is loaded"));
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_leaders_without_a_quorum_are_the_expected_split_brain_and_a_majority_quorum_removes_one()
 {
    let _one = one_at_a_time().await;
    let page = Page::start("split").await;
    page.click("start-all").await;
    page.click("run-end").await;
    assert_eq!(page.text("coordinator").await, "10");
    page.mode("isolate").await;
    for id in [8, 9, 10] {
        page.click_process(id).await;
    }
    page.click("isolate").await;
    // Right after isolating, Run to the end goes on until both parts settle.
    let before = page.now_tm().await;
    page.click("run-end").await;
    assert!(
        page.now_tm().await > before + 20.0,
        "ran past the leader timeout"
    );
    assert_eq!(page.text("leaders").await, "2 (7 and 10)");
    let note = page.text("leaders-note").await;
    assert!(
        note.contains("split brain that Bully without a quorum allows"),
        "{note}"
    );
    assert_eq!(page.text("violations").await, "0");
    page.js("document.activeElement.blur()").await;
    screenshot(
        &page.client.screenshot().await.unwrap(),
        "web-simulator-split-brain.png",
    );

    page.click("quorum-replay").await;
    page.settled_loading().await;
    assert_eq!(
        page.js("return document.getElementById('quorum').value")
            .await,
        "majority"
    );
    page.click("run-end").await;
    assert_eq!(page.text("leaders").await, "1");
    assert_eq!(page.text("coordinator").await, "none agreed (leading: 7)");
    page.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_sends_the_module_compressed_with_its_content_encoding() {
    let _one = one_at_a_time().await;
    let page = Page::start("compressed").await;
    let seen = page
        .client
        .execute_async(
            "const done = arguments[arguments.length - 1];
             const entry = performance.getEntriesByType('resource')
               .find(e => e.name.endsWith('bully_web_bg.wasm'));
             fetch('pkg/bully_web_bg.wasm', { cache: 'no-store' }).then(r =>
               done({ encoding: r.headers.get('content-encoding'), type: r.headers.get('content-type'),
                      encoded: entry.encodedBodySize, decoded: entry.decodedBodySize }));",
            vec![],
        )
        .await
        .unwrap();
    println!("the browser got the module as {seen}");
    let (encoded, decoded) = (
        seen["encoded"].as_u64().unwrap(),
        seen["decoded"].as_u64().unwrap(),
    );
    assert!(
        encoded * 2 < decoded,
        "{encoded} of {decoded} bytes on the wire"
    );
    assert!(
        ["br", "gzip"].contains(&seen["encoding"].as_str().unwrap()),
        "{seen}"
    );
    assert_eq!(seen["type"], "application/wasm");

    // Each encoding on request, decoding to the module itself.
    let module = std::fs::read(support::built().dir.join("pkg/bully_web_bg.wasm")).unwrap();
    let url = format!("{}pkg/bully_web_bg.wasm", page.base);
    for accept in ["br", "gzip", "identity"] {
        let (encoding, body) = get(&url, accept).await;
        let decoded = match accept {
            "br" => {
                let mut out = Vec::new();
                brotli::BrotliDecompress(&mut body.as_slice(), &mut out).unwrap();
                out
            }
            "gzip" => {
                use std::io::Read;
                let mut out = Vec::new();
                flate2::read::GzDecoder::new(body.as_slice())
                    .read_to_end(&mut out)
                    .unwrap();
                out
            }
            _ => body.clone(),
        };
        assert_eq!(
            encoding.as_deref(),
            (accept != "identity").then_some(accept)
        );
        assert_eq!(decoded, module, "{accept}");
        println!("Accept-Encoding: {accept}: {} bytes", body.len());
    }
    page.close().await;
}

/// GET `url` with an `Accept-Encoding`; the `Content-Encoding` and the body.
async fn get(url: &str, accept: &str) -> (Option<String>, Vec<u8>) {
    use http_body_util::{BodyExt, Empty};
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Empty<hyper::body::Bytes>>();
    let request = hyper::Request::get(url)
        .header("accept-encoding", accept)
        .body(Empty::new())
        .unwrap();
    let response = client.request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let encoding = response
        .headers()
        .get("content-encoding")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    (encoding, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_smaller_things_a_class_sees() {
    let _one = one_at_a_time().await;
    let page = Page::start("small").await;

    // Step after the end does not jump the clock.
    page.click("elect").await;
    for _ in 0..60 {
        page.click("step").await;
        if page.text("status").await.starts_with("Nothing to step") {
            break;
        }
    }
    let end = page.now_tm().await;
    assert!(end <= 3.0, "{end}");
    page.click("step").await;
    assert_eq!(page.now_tm().await, end);

    fits(&page).await;
    // Messages are drawn above the processes.
    let layers = page
        .js(
            "const z = (id) => Number(getComputedStyle(document.getElementById(id)).zIndex);
             return [z('nodes'), z('messages')];",
        )
        .await;
    assert!(layers[1].as_i64() > layers[0].as_i64(), "{layers}");

    // The legend names the leader and the candidate.
    let legend = page
        .js("return document.querySelector('.legend').textContent")
        .await;
    for word in ["leader", "candidate", "follower", "crashed", "initiator"] {
        assert!(legend.as_str().unwrap().contains(word), "{word}");
    }

    // No select cuts its options off, and none names a source by a file number.
    let cut = page
        .js("const ctx = document.createElement('canvas').getContext('2d');
             const cut = [];
             for (const select of document.querySelectorAll('select')) {
               ctx.font = getComputedStyle(select).font;
               for (const option of select.options) {
                 if (ctx.measureText(option.text).width + 28 > select.clientWidth) cut.push(option.text);
                 if (/seed \\d/.test(option.text)) cut.push(option.text);
               }
             }
             return cut;")
        .await;
    assert_eq!(cut, json!([]));

    // With 64 processes no term label overlaps another or a process.
    page.new_cluster(64, "classic").await;
    page.click("start-all").await;
    page.click("run-end").await;
    let overlaps = page
        .js("const boxes = (s) => [...document.querySelectorAll(s)].map(e => e.getBoundingClientRect());
             const labels = boxes('#labels .term');
             const circles = boxes('#nodes circle.body');
             const meet = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
             let found = [];
             labels.forEach((a, i) => {
               labels.forEach((b, j) => { if (i < j && meet(a, b)) found.push(`labels ${i + 1} and ${j + 1}`); });
               circles.forEach((c, j) => { if (meet(a, c)) found.push(`label ${i + 1} and process ${j + 1}`); });
             });
             return { count: labels.length, text: labels.length && document.querySelector('#labels .term').textContent, found };")
        .await;
    assert_eq!(overlaps["count"], 64);
    assert_eq!(overlaps["text"], "t1");
    assert_eq!(overlaps["found"], json!([]));

    // The favicon.
    let icon = page
        .client
        .execute_async(
            "const done = arguments[arguments.length - 1];
             const href = document.querySelector('link[rel=icon]').href;
             fetch(href).then(r => done([r.status, r.headers.get('content-type')]));",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(icon, json!([200, "image/svg+xml"]));
    page.close().await;
}
