//! The page in a real headless Chromium (Debian's `chromium` and
//! `chromium-driver`), driven over WebDriver: a teacher's session, click by click.
//!
//! It builds the site (the wasm module and its glue, as `serve` does), serves it on
//! 127.0.0.1, and checks what the page shows: seed 003's N = 10 election from
//! process 4 (51 messages, equation (3)), the modified algorithm's 25, the
//! coordinator crashed by a click and 9 crowned, a scenario saved, the page
//! reloaded and the scenario loaded back to the same state, and the shared link.
//! It also takes the README's screenshot (`BULLY_WEB_SCREENSHOT=docs/web-simulator.png`,
//! a path from the repository's root) and measures the frame rate while N = 64
//! animate (printed, not asserted: speed is a benchmark, not a test).
//!
//! `BULLY_CHROMEDRIVER` and `BULLY_CHROMIUM` override `/usr/bin/chromedriver` and
//! `/usr/bin/chromium`.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bully_web::site;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};

/// chromedriver, stopped when the test ends (by its own process id).
struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    fn start() -> Driver {
        let port = free_port();
        let program =
            std::env::var("BULLY_CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into());
        let child = Command::new(&program)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| {
                panic!("cannot start {program} ({error}): apt-get install chromium-driver")
            });
        Driver { child, port }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("a free port");
    listener.local_addr().expect("bound").port()
}

async fn connect(driver: &Driver) -> Client {
    let chromium = std::env::var("BULLY_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--window-size=1400,1000"],
        }),
    );
    let url = format!("http://127.0.0.1:{}", driver.port);
    // chromedriver takes a moment to listen.
    for _ in 0..100 {
        let connected = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities.clone())
            .connect(&url)
            .await;
        if let Ok(client) = connected {
            return client;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("chromedriver did not answer on {url}");
}

/// The page, as a person uses it.
struct Page {
    client: Client,
    base: String,
}

impl Page {
    async fn open(&self, url: &str) {
        self.client.goto(url).await.expect("page loads");
        self.client
            .wait()
            .at_most(Duration::from_secs(20))
            .for_element(Locator::Css("body[data-ready=true]"))
            .await
            .expect("the wasm module starts");
    }

    async fn click(&self, id: &str) {
        self.client
            .find(Locator::Id(id))
            .await
            .unwrap_or_else(|_| panic!("#{id}"))
            .click()
            .await
            .unwrap_or_else(|_| panic!("click #{id}"));
    }

    async fn click_process(&self, id: u64) {
        let selector = format!("#nodes g[data-id=\"{id}\"]");
        let node = self.client.find(Locator::Css(&selector)).await.unwrap();
        node.click().await.unwrap();
    }

    async fn type_into(&self, id: &str, text: &str) {
        let input = self.client.find(Locator::Id(id)).await.unwrap();
        input.clear().await.unwrap();
        input.send_keys(text).await.unwrap();
    }

    async fn choose(&self, id: &str, value: &str) {
        let select = self.client.find(Locator::Id(id)).await.unwrap();
        select.select_by_value(value).await.unwrap();
    }

    async fn text(&self, id: &str) -> String {
        let element = self.client.find(Locator::Id(id)).await.unwrap();
        element.text().await.unwrap()
    }

    /// The count the panel shows for a kind of message.
    async fn count(&self, kind: &str) -> String {
        let selector = format!("#count-{kind} td");
        let cell = self.client.find(Locator::Css(&selector)).await.unwrap();
        cell.text().await.unwrap()
    }

    async fn process_class(&self, id: u64) -> String {
        let selector = format!("#nodes g[data-id=\"{id}\"]");
        let node = self.client.find(Locator::Css(&selector)).await.unwrap();
        node.attr("class").await.unwrap().unwrap_or_default()
    }

    /// The module's own frame, for comparing whole states.
    async fn frame(&self) -> Value {
        let json = self
            .client
            .execute("return window.bully.frame()", vec![])
            .await
            .unwrap();
        serde_json::from_str(json.as_str().unwrap()).unwrap()
    }

    async fn new_cluster(&self, n: u64, algorithm: &str) {
        self.type_into("n", &n.to_string()).await;
        self.choose("algorithm", algorithm).await;
        self.click("new-cluster").await;
    }
}

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

fn repository_root() -> PathBuf {
    site::crate_dir().join("../..")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teacher_runs_seed_003s_election_crashes_the_coordinator_and_shares_the_scenario() {
    let out = site::crate_dir().join("target").join("browser-site");
    let built = site::build(&out).expect("the site builds");
    println!("wasm module: {} bytes", built.wasm_bytes);
    let (listener, addr) = site::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .unwrap();
    tokio::spawn(site::serve(listener, out));
    let driver = Driver::start();
    let page = Page {
        client: connect(&driver).await,
        base: format!("http://{addr}/"),
    };
    page.open(&page.base).await;

    // Seed 003, Figure 3's setting: ten processes, 4 calls the election.
    page.new_cluster(10, "classic").await;
    page.type_into("initiators", "4").await;
    page.click("elect").await;
    assert!(
        page.process_class(4).await.contains("initiator"),
        "4 is green"
    );
    page.click("run-end").await;
    assert_eq!(page.text("total").await, "51", "equation (3)");
    assert_eq!(page.count("Election").await, "21");
    assert_eq!(page.count("Answer").await, "21");
    assert_eq!(page.count("Coordinator").await, "9");
    assert_eq!(page.text("coordinator").await, "10");
    assert_eq!(page.text("t1-expected").await, "51");
    assert!(page.process_class(10).await.contains("crowned"));

    // The modified algorithm, same setting: 25 messages (3N - P - 1).
    page.choose("algorithm", "modified").await;
    page.click("elect").await;
    page.click("run-end").await;
    assert_eq!(page.text("total").await, "25");
    assert_eq!(page.text("coordinator").await, "10");

    // Crash the coordinator with a click: the others notice and crown 9.
    page.click_process(10).await;
    assert!(page.process_class(10).await.contains("down"));
    page.click("run-end").await;
    assert_eq!(page.text("coordinator").await, "9");
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
    assert_eq!(page.frame().await, saved);
    assert_eq!(page.text("coordinator").await, "9");
    assert!(!page.text("algorithm").await.is_empty());
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
    let png = page.client.screenshot().await.unwrap();
    let target = site::crate_dir().join("target").join("web-simulator.png");
    std::fs::write(&target, &png).unwrap();
    if let Ok(path) = std::env::var("BULLY_WEB_SCREENSHOT") {
        std::fs::write(repository_root().join(path), &png).unwrap();
    }

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

    page.client.close().await.unwrap();
}
