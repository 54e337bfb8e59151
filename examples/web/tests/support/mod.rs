//! The browser tests' one harness: the site built once per test binary and
//! served on 127.0.0.1, Debian's chromedriver and headless Chromium, and a
//! [`Page`] that a test drives as a person would (clicks, keys, files).
//!
//! `BULLY_CHROMEDRIVER` and `BULLY_CHROMIUM` override `/usr/bin/chromedriver` and
//! `/usr/bin/chromium`; `BULLY_AXE` overrides where axe-core's `axe.min.js` is
//! read from (by default `target/npm/axe-core-VERSION/node_modules/axe-core/axe.min.js`,
//! which [`axe_source`] installs from the npm registry with npm when it is missing).

#![allow(dead_code, unreachable_pub)]

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use bully_web::site;
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};

/// The axe-core release the accessibility check runs (from the npm registry).
pub const AXE_VERSION: &str = "4.14.1";

/// The built site, once per test binary.
pub fn built() -> &'static site::Built {
    static BUILT: OnceLock<site::Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = site::crate_dir().join("target").join("browser-site");
        let built = site::build(&out).expect("the site builds");
        println!(
            "wasm module: {} bytes, {} with brotli, {} with gzip",
            built.wasm_bytes, built.wasm_compressed.brotli, built.wasm_compressed.gzip
        );
        built
    })
}

/// One browser at a time: two Chromiums on two cores would slow each other's
/// measurements down and gain nothing.
/// (An async lock: the tests hold it across their awaits, each in its own runtime.)
pub async fn one_at_a_time() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    LOCK.lock().await
}

/// chromedriver, stopped when the test ends (by its own process id).
pub struct Driver {
    child: Child,
    port: u16,
}

impl Driver {
    pub fn start() -> Driver {
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

/// A browser on the served site; downloads go to `downloads`.
pub struct Page {
    pub client: Client,
    pub base: String,
    pub downloads: PathBuf,
    // Kept for the page's life.
    _driver: Driver,
}

impl Page {
    /// Builds (once) and serves the site, starts a browser and opens the page.
    pub async fn start(name: &str) -> Page {
        let built = built();
        let (listener, addr) = site::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
            .await
            .unwrap();
        tokio::spawn(site::serve(listener, built.dir.clone()));
        let downloads = site::crate_dir()
            .join("target")
            .join("browser-downloads")
            .join(name);
        let _ = std::fs::remove_dir_all(&downloads);
        std::fs::create_dir_all(&downloads).unwrap();
        let driver = Driver::start();
        let client = connect(&driver, &downloads).await;
        let page = Page {
            client,
            base: format!("http://{addr}/"),
            downloads,
            _driver: driver,
        };
        page.open(&page.base.clone()).await;
        page
    }

    /// Opens `url` as a new visit (a link differing only in its `#...` would
    /// otherwise be a jump within the page) and waits for the module to start
    /// and any scenario in the link to finish loading.
    pub async fn open(&self, url: &str) {
        self.client.goto("about:blank").await.unwrap();
        self.client.goto(url).await.expect("page loads");
        self.client
            .wait()
            .at_most(Duration::from_secs(30))
            .for_element(Locator::Css("body[data-ready=true]"))
            .await
            .expect("the wasm module starts");
        self.settled_loading().await;
    }

    /// Waits until no scenario is loading.
    pub async fn settled_loading(&self) {
        self.client
            .wait()
            .at_most(Duration::from_secs(60))
            .for_element(Locator::Css("body[data-ready=true]:not([data-loading])"))
            .await
            .expect("the scenario finishes loading");
    }

    pub async fn click(&self, id: &str) {
        self.client
            .find(Locator::Id(id))
            .await
            .unwrap_or_else(|_| panic!("#{id}"))
            .click()
            .await
            .unwrap_or_else(|_| panic!("click #{id}"));
    }

    pub async fn click_process(&self, id: u64) {
        let selector = format!("#nodes g[data-id=\"{id}\"] circle.body");
        let node = self.client.find(Locator::Css(&selector)).await.unwrap();
        node.click().await.unwrap();
    }

    pub async fn type_into(&self, id: &str, text: &str) {
        let input = self.client.find(Locator::Id(id)).await.unwrap();
        input.clear().await.unwrap();
        input.send_keys(text).await.unwrap();
    }

    /// Types into a field and leaves it (its change event fires), as Tab does.
    pub async fn enter_field(&self, id: &str, text: &str) {
        self.type_into(id, text).await;
        self.js(&format!(
            "document.getElementById('{id}').dispatchEvent(new Event('change'))"
        ))
        .await;
    }

    pub async fn choose(&self, id: &str, value: &str) {
        let select = self.client.find(Locator::Id(id)).await.unwrap();
        select.select_by_value(value).await.unwrap();
    }

    pub async fn mode(&self, value: &str) {
        let selector = format!("input[name=mode][value={value}]");
        self.client
            .find(Locator::Css(&selector))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
    }

    pub async fn text(&self, id: &str) -> String {
        let element = self.client.find(Locator::Id(id)).await.unwrap();
        element.text().await.unwrap()
    }

    /// The count the panel shows for a kind of message.
    pub async fn count(&self, kind: &str) -> String {
        let selector = format!("#count-{kind} td");
        let cell = self.client.find(Locator::Css(&selector)).await.unwrap();
        cell.text().await.unwrap()
    }

    pub async fn process_class(&self, id: u64) -> String {
        self.process_attr(id, "class").await
    }

    pub async fn process_attr(&self, id: u64, name: &str) -> String {
        let selector = format!("#nodes g[data-id=\"{id}\"]");
        let node = self.client.find(Locator::Css(&selector)).await.unwrap();
        node.attr(name).await.unwrap().unwrap_or_default()
    }

    /// Runs a script and returns its value.
    pub async fn js(&self, script: &str) -> Value {
        self.client.execute(script, vec![]).await.unwrap()
    }

    /// The module's own frame, for comparing whole states.
    pub async fn frame(&self) -> Value {
        let json = self.js("return window.bully.frame()").await;
        serde_json::from_str(json.as_str().unwrap()).unwrap()
    }

    /// Simulated time, in message delays.
    pub async fn now_tm(&self) -> f64 {
        self.text("now").await.parse().unwrap()
    }

    pub async fn new_cluster(&self, n: u64, algorithm: &str) {
        self.type_into("n", &n.to_string()).await;
        self.choose("algorithm", algorithm).await;
        self.click("new-cluster").await;
    }

    /// Presses keys on whatever has the focus.
    pub async fn press(&self, keys: &str) {
        let focused = self.client.active_element().await.unwrap();
        focused.send_keys(keys).await.unwrap();
    }

    /// The focused element's id, or its `aria-label`.
    pub async fn focused(&self) -> String {
        self.js("const e = document.activeElement;
             return e.id || e.getAttribute('aria-label') || e.tagName;")
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// The notice at the top: its text, and whether all of it is inside the window.
    pub async fn notice(&self) -> (String, bool) {
        let seen = self
            .js(
                "const box = document.getElementById('notice');
                 const r = box.getBoundingClientRect();
                 return { text: document.getElementById('notice-text').textContent,
                          visible: !box.hidden && r.top >= 0 && r.left >= 0 && r.height > 0 &&
                                   r.bottom <= window.innerHeight && r.right <= window.innerWidth };",
            )
            .await;
        (
            seen["text"].as_str().unwrap().to_owned(),
            seen["visible"].as_bool().unwrap(),
        )
    }

    /// Plays for a moment of wall time and returns how far the clock went.
    pub async fn play_briefly(&self) -> f64 {
        let before = self.now_tm().await;
        self.click("play").await;
        tokio::time::sleep(Duration::from_millis(600)).await;
        self.click("play").await;
        self.now_tm().await - before
    }

    /// Waits (up to 20 s) for a file to appear in the downloads folder.
    pub async fn downloaded(&self) -> PathBuf {
        // Chromium reserves the file's final name with an empty placeholder and
        // writes into a `.crdownload` beside it, renaming it over the placeholder
        // at the end: the download is done when no partial file is left and the
        // file under its final name holds a whole JSON document.
        for _ in 0..200 {
            let files: Vec<PathBuf> = std::fs::read_dir(&self.downloads)
                .unwrap()
                .map(|entry| entry.unwrap().path())
                .collect();
            let partial = files
                .iter()
                .any(|path| path.extension().is_some_and(|ext| ext == "crdownload"));
            let done = files.into_iter().find(|path| {
                path.extension().is_some_and(|ext| ext == "json")
                    && std::fs::read_to_string(path)
                        .is_ok_and(|text| serde_json::from_str::<Value>(&text).is_ok())
            });
            if let (false, Some(path)) = (partial, done) {
                return path;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("nothing downloaded into {}", self.downloads.display());
    }

    /// Chooses `path` in the file input `id`, as the file dialog would.
    pub async fn upload(&self, id: &str, path: &Path) {
        let input = self.client.find(Locator::Id(id)).await.unwrap();
        input.send_keys(path.to_str().unwrap()).await.unwrap();
    }

    pub async fn close(self) {
        self.client.close().await.unwrap();
    }
}

/// The WebDriver keys a test presses.
pub fn key(key: Key) -> String {
    char::from(key).to_string()
}

async fn connect(driver: &Driver, downloads: &Path) -> Client {
    let chromium = std::env::var("BULLY_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--window-size=1400,1000"],
            "prefs": {
                "download.default_directory": downloads,
                "download.prompt_for_download": false,
            },
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

/// axe-core's browser build, as a script to inject: from `BULLY_AXE`, or from
/// the npm package under `target/npm`, installed there with npm if missing.
pub fn axe_source() -> String {
    let path = match std::env::var_os("BULLY_AXE") {
        Some(path) => PathBuf::from(path),
        None => {
            let prefix = site::crate_dir()
                .join("target")
                .join("npm")
                .join(format!("axe-core-{AXE_VERSION}"));
            let path = prefix.join("node_modules/axe-core/axe.min.js");
            if !path.exists() {
                let status = Command::new("npm")
                    .args(["install", "--no-audit", "--no-fund", "--prefix"])
                    .arg(&prefix)
                    .arg(format!("axe-core@{AXE_VERSION}"))
                    .status()
                    .unwrap_or_else(|error| {
                        panic!("cannot run npm ({error}): install Node.js's npm, or set BULLY_AXE")
                    });
                assert!(
                    status.success(),
                    "npm install axe-core@{AXE_VERSION}: {status}"
                );
            }
            path
        }
    };
    std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("axe-core at {}: {error}", path.display()))
}

pub fn repository_root() -> PathBuf {
    site::crate_dir().join("../..")
}
