//! The web portal in a real browser (README, "The portal"): Debian's Chromium, headless, driven
//! through WebDriver (`chromedriver`) against the real server. As each demo user type: sign
//! in, browse stock with a filter and a sort, open a record, upload a product file and see it
//! processed with its counts, create a key and use its secret against the API, sign out. A
//! host never sees Files; a warehouse never sees order money. The SQLite run saves a
//! screenshot of each section into `docs/portal/`.
//!
//! Without `chromium` and `chromedriver` the test says so loudly and passes; under `CI=true`
//! it fails.

mod common;

use brandhub::demo_load::demo_password;
use fantoccini::{Client, ClientBuilder, Locator};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How long the page may take to show what a step waits for.
const WAIT: Duration = Duration::from_secs(30);

fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|path| path.is_file())
    })
}

/// The browser's binary and its WebDriver, or a loud skip.
fn browser() -> Option<(PathBuf, PathBuf)> {
    let chromium = on_path("chromium").or_else(|| on_path("chromium-browser"));
    let driver = on_path("chromedriver");
    match (chromium, driver) {
        (Some(chromium), Some(driver)) => Some((chromium, driver)),
        _ => {
            brandhub_filestore::testing::skip(
                "the portal's browser tests",
                "chromium and chromedriver are not installed (apt-get install chromium chromium-driver)",
            );
            None
        }
    }
}

/// A running chromedriver, stopped when dropped.
struct Driver {
    child: Child,
    port: u16,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn start_driver(driver: &PathBuf) -> Driver {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let driver = Driver {
        child: Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts"),
        port,
    };
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return driver;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("chromedriver did not listen on port {port}");
}

async fn open_browser(driver: &Driver, chromium: &PathBuf, downloads: &std::path::Path) -> Client {
    // The WebDriver client's TLS stack needs the process's provider (only plain HTTP is used).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--ignore-certificate-errors", "--window-size=1280,900", "--lang=en-GB",
                     "--hide-scrollbars", "--force-device-scale-factor=1"],
            // Downloads (an error report) land where the test reads them, without asking.
            "prefs": {
                "download.default_directory": downloads,
                "download.prompt_for_download": false,
                "download.directory_upgrade": true
            }
        }),
    );
    ClientBuilder::rustls()
        .expect("a WebDriver client")
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a browser session")
}

async fn find(client: &Client, css: &str) -> fantoccini::elements::Element {
    client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no {css} on the page: {e}"))
}

/// `key: 'text',` lines of a portal language file.
fn texts(source: &str) -> Vec<(&str, String)> {
    source
        .lines()
        .filter_map(|line| {
            let (key, rest) = line.trim().split_once(": '")?;
            Some((key, rest.strip_suffix("',")?.replace("\\'", "'")))
        })
        .collect()
}

/// The portal's text for an English one in the page's language (the same key in
/// `lang/<code>.js`), so that each step reads the same whatever the user's `detail.lang`.
async fn in_page_language(client: &Client, english: &str) -> String {
    const EN: &str = include_str!("../../server/portal/lang/en.js");
    const DE: &str = include_str!("../../server/portal/lang/de.js");
    let other = match page_language(client).await.as_str() {
        "de" => texts(DE),
        _ => return english.to_string(),
    };
    // An exact text, or a text with one {placeholder} whose value is carried over.
    let found = texts(EN).into_iter().find_map(|(key, text)| {
        if text == english {
            return Some((key, None));
        }
        let (start, rest) = text.split_once('{')?;
        let (name, end) = rest.split_once('}')?;
        let value = english.strip_prefix(start)?.strip_suffix(end)?;
        Some((key, Some((format!("{{{name}}}"), value.to_string()))))
    });
    let Some((key, value)) = found else {
        return english.to_string();
    };
    let Some((_, text)) = other.into_iter().find(|(k, _)| *k == key) else {
        return english.to_string();
    };
    match value {
        Some((placeholder, value)) => text.replace(&placeholder, &value),
        None => text,
    }
}

/// The page's language (`en` unless the user's is another the portal has).
async fn page_language(client: &Client) -> String {
    client
        .execute("return document.documentElement.lang", vec![])
        .await
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// A button or link by its accessible text (given in English, found in the page's language).
async fn by_text(client: &Client, tag: &str, text: &str) -> fantoccini::elements::Element {
    let text = in_page_language(client, text).await;
    let xpath = format!("//{tag}[normalize-space(.)='{text}' or @aria-label='{text}']");
    match client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::XPath(&xpath))
        .await
    {
        Ok(found) => found,
        Err(e) => panic!("no {tag} '{text}' ({e}) in:\n{}", body_text(client).await),
    }
}

/// The input a label names (the label's `for`; given in English, found in the page's
/// language).
async fn labelled(client: &Client, label: &str) -> fantoccini::elements::Element {
    let label = in_page_language(client, label).await;
    let xpath = format!("//label[normalize-space(.)='{label}']");
    let label = match client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::XPath(&xpath))
        .await
    {
        Ok(found) => found,
        Err(e) => panic!("no label '{label}' ({e}) in:\n{}", body_text(client).await),
    };
    let id = label
        .attr("for")
        .await
        .unwrap()
        .expect("labels name their control");
    find(client, &format!("[id='{id}']")).await
}

/// A count as the portal shows it: thousands grouped with commas in English, dots in German.
fn grouped(n: u64, lang: &str) -> String {
    let separator = if lang == "de" { '.' } else { ',' };
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(separator);
        }
        out.push(c);
    }
    out
}

async fn body_text(client: &Client) -> String {
    find(client, "body").await.text().await.unwrap()
}

/// Waits until the page's text contains `needle`.
async fn wait_for_text(client: &Client, needle: &str) {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let text = body_text(client).await;
        if text.contains(needle) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "'{needle}' never appeared in:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until no "Loading…" is shown.
async fn settled(client: &Client) {
    let deadline = std::time::Instant::now() + WAIT;
    while body_text(client).await.contains("Loading…") {
        assert!(
            std::time::Instant::now() < deadline,
            "the page never finished loading"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn screenshots_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/portal")
}

async fn screenshot(client: &Client, save: bool, name: &str) {
    if !save {
        return;
    }
    let png = client.screenshot().await.expect("a screenshot");
    std::fs::create_dir_all(screenshots_dir()).unwrap();
    std::fs::write(screenshots_dir().join(format!("{name}.png")), png).unwrap();
}

async fn go(client: &Client, base: &str, hash: &str) {
    client.goto(&format!("{base}/{hash}")).await.unwrap();
    settled(client).await;
}

async fn sign_in(client: &Client, base: &str, email: &str, password: &str) {
    client.goto(&format!("{base}/")).await.unwrap();
    labelled(client, "Email")
        .await
        .send_keys(email)
        .await
        .unwrap();
    labelled(client, "Password")
        .await
        .send_keys(password)
        .await
        .unwrap();
    by_text(client, "button", "Sign in")
        .await
        .click()
        .await
        .unwrap();
    // Signed in: the header's sign-out button (in the user's language, which the page
    // switches to only now).
    find(client, "header .who button").await;
    settled(client).await;
}

async fn nav_sections(client: &Client) -> Vec<String> {
    let mut names = Vec::new();
    for link in client.find_all(Locator::Css("header nav a")).await.unwrap() {
        names.push(link.text().await.unwrap());
    }
    names
}

/// Browse stock filtered by `demand` and sorted by `inStock`, checked against the API.
async fn browse_stock(fx: &common::Fixture, client: &Client, user_type: &str, save: bool) {
    let credential = fx.credential(user_type);
    let api = fx.client();
    let first: serde_json::Value = api
        .get(format!("{}/api/stock?pageSize=1&fields=demand", fx.base))
        .basic_auth(&credential.email, Some(&credential.secret))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let demand = first["response"]["stock"][0]["demand"]
        .as_i64()
        .expect("the user sees stock");
    go(client, &fx.base, "#/browse/stock").await;
    let field = labelled(client, "Field").await;
    field
        .select_by_value("demand")
        .await
        .expect("demand is a filter field");
    labelled(client, "Value")
        .await
        .send_keys(&demand.to_string())
        .await
        .unwrap();
    by_text(client, "button", "Add filter")
        .await
        .click()
        .await
        .unwrap();
    find(client, &format!("[data-filter='demand={demand}']")).await;
    settled(client).await;
    // Headings are the description's titles in the page's language.
    let lang = page_language(client).await;
    let doc = fx.get("/api/openapi.json").await.json();
    let title = |property: &str| {
        doc["components"]["schemas"]["Stock"]["properties"][property]["x-brandhub-titles"][&lang]
            .as_str()
            .unwrap_or_else(|| panic!("a title of {property} in {lang}"))
            .to_string()
    };
    let sort = in_page_language(client, "Sort by {field}")
        .await
        .replace("{field}", &title("inStock"));
    by_text(client, "a", &sort).await.click().await.unwrap();
    find(client, "th[aria-sort=ascending]").await;
    settled(client).await;
    let expected: serde_json::Value = api
        .get(format!(
            "{}/api/stock?demand={demand}&order_by=inStock&pageSize=25&fields=inStock",
            fx.base
        ))
        .basic_auth(&credential.email, Some(&credential.secret))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let found = expected["response"]["recordsFound"].as_u64().unwrap();
    let summary = in_page_language(client, "{count} records")
        .await
        .replace("{count}", &grouped(found, &lang));
    wait_for_text(client, &summary).await;
    let rows = client.find_all(Locator::Css("tbody tr")).await.unwrap();
    assert_eq!(
        rows.len() as u64,
        found.min(25),
        "{user_type}: one row per record of the page"
    );
    screenshot(client, save, "browse").await;
    // The first row's link opens the record.
    find(client, "tbody tr td a").await.click().await.unwrap();
    find(client, "dl.record").await;
    settled(client).await;
    let text = body_text(client).await;
    assert!(
        text.contains(&title("inStock")) && text.contains(&title("stock_variant")),
        "{text}"
    );
    screenshot(client, save, "record").await;
}

/// Uploads the product template (its example row) for the first brand offered.
/// Uploads a product file through the Files form on the page: its type, the file, Upload.
async fn upload_in_page(client: &Client, path: &std::path::Path) {
    labelled(client, "File type")
        .await
        .select_by_value("product")
        .await
        .unwrap();
    find(client, "input[type=file]")
        .await
        .send_keys(path.to_str().unwrap())
        .await
        .unwrap();
    by_text(client, "button", "Upload")
        .await
        .click()
        .await
        .unwrap();
}

async fn upload_product(
    fx: &common::Fixture,
    client: &Client,
    user_type: &str,
    save: bool,
    downloads: &std::path::Path,
) {
    let credential = fx.credential(user_type);
    let template = fx
        .client()
        .get(format!("{}/api/file/template/product", fx.base))
        .basic_auth(&credential.email, Some(&credential.secret))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("portal-{user_type}.xlsx"));
    std::fs::write(&path, &template).unwrap();
    go(client, &fx.base, "#/files").await;
    upload_in_page(client, &path).await;
    let status = client
        .wait()
        .at_most(Duration::from_secs(60))
        .for_element(Locator::Css(".upload-status[data-status=processed]"))
        .await
        .unwrap_or_else(|_| panic!("{user_type}: the file never showed processed"));
    let read = status
        .find(Locator::Css("[data-count=rowsRead]"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let applied = status
        .find(Locator::Css("[data-count=rowsApplied]"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(
        (read.as_str(), applied.as_str()),
        ("1", "1"),
        "{user_type}: the example row is read and applied"
    );
    settled(client).await;
    screenshot(client, save, "files").await;

    // A file with a bad row: its error report downloads, the row with its reason beside it.
    let bad = common::xlsx(&[
        common::row(&["Product Code", "Title", "Barcode"]),
        common::row(&["PORTAL-BAD", "A row without a barcode", ""]),
    ]);
    let bad_path = dir.path().join(format!("portal-bad-{user_type}.xlsx"));
    std::fs::write(&bad_path, &bad).unwrap();
    upload_in_page(client, &bad_path).await;
    client
        .wait()
        .at_most(Duration::from_secs(60))
        .for_element(Locator::Css(
            ".upload-status[data-status=processed] [data-report]",
        ))
        .await
        .unwrap_or_else(|_| panic!("{user_type}: no error report offered for a skipped row"))
        .click()
        .await
        .unwrap();
    let report = downloads.join(format!("portal-bad-{user_type}-errors.xlsx"));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !report.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "{user_type}: the error report was not downloaded: {:?}",
            std::fs::read_dir(downloads).unwrap().collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let table = brandhub_sheet::read(
        &std::fs::read(&report).unwrap(),
        brandhub_sheet::Format::Xlsx,
        &brandhub_sheet::Limits::default(),
    )
    .unwrap();
    let last = table
        .header()
        .cells()
        .last()
        .unwrap()
        .as_text()
        .unwrap()
        .into_owned();
    assert_eq!(last, "Error");
    assert_eq!(table.rows().len(), 1);
    assert_eq!(table.rows()[0].cells()[0].as_text().unwrap(), "PORTAL-BAD");
}

/// Creates a key for stock reads in Admin and uses its secret against the API.
async fn create_key(fx: &common::Fixture, client: &Client, user_type: &str, save: bool) {
    let credential = fx.credential(user_type);
    go(client, &fx.base, "#/admin").await;
    let name = labelled(client, "Key name").await;
    name.clear().await.unwrap();
    name.send_keys(&format!("browser {user_type} {:?}", fx.db))
        .await
        .unwrap();
    labelled(client, "Grants")
        .await
        .send_keys("stock:GET")
        .await
        .unwrap();
    by_text(client, "button", "Create key")
        .await
        .click()
        .await
        .unwrap();
    let secret = find(client, ".secret-value").await.text().await.unwrap();
    assert!(secret.starts_with("bhk_"), "{secret}");
    by_text(client, "button", "Copy").await;
    let client_api = fx.client();
    let stock = client_api
        .get(format!("{}/api/stock?pageSize=1", fx.base))
        .basic_auth(&credential.email, Some(&secret))
        .send()
        .await
        .unwrap();
    assert_eq!(stock.status(), 200, "{user_type}: the new key reads stock");
    let orders = client_api
        .get(format!("{}/api/order?pageSize=1", fx.base))
        .basic_auth(&credential.email, Some(&secret))
        .send()
        .await
        .unwrap();
    assert_eq!(orders.status(), 403, "{user_type}: and nothing else");
    screenshot(client, save, "admin").await;
}

async fn sign_out(client: &Client) {
    by_text(client, "button", "Sign out")
        .await
        .click()
        .await
        .unwrap();
    by_text(client, "button", "Sign in").await;
    let stored = client
        .execute(
            "return sessionStorage.length + document.cookie.length",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        stored,
        serde_json::json!(0),
        "nothing is kept after signing out, and no cookie ever"
    );
}

async fn as_each_user(fx: &common::Fixture) {
    let Some((chromium, driver)) = browser() else {
        return;
    };
    let driver = start_driver(&driver).await;
    let downloads = tempfile::tempdir().unwrap();
    let client = open_browser(&driver, &chromium, downloads.path()).await;
    let save = fx.db == common::Db::Sqlite;
    // The sign-in page, and a wrong password's message beside the form.
    client.goto(&format!("{}/", fx.base)).await.unwrap();
    labelled(&client, "Email")
        .await
        .send_keys("admin@demo.brandhub.test")
        .await
        .unwrap();
    labelled(&client, "Password")
        .await
        .send_keys("not the password")
        .await
        .unwrap();
    by_text(&client, "button", "Sign in")
        .await
        .click()
        .await
        .unwrap();
    let problem = find(&client, "form .problem").await.text().await.unwrap();
    assert!(problem.contains("do not match"), "{problem}");
    client.goto(&format!("{}/", fx.base)).await.unwrap();
    screenshot(&client, save, "sign-in").await;

    // Every demo user type in turn, in the same browser, each in its own language
    // (`detail.lang`: the company and warehouse users read German).
    for user_type in ["admin", "sponsor", "company", "host", "warehouse"] {
        let credential = fx.credential(user_type);
        sign_in(
            &client,
            &fx.base,
            &credential.email,
            &demo_password(credential.user_type),
        )
        .await;
        let sections = nav_sections(&client).await;
        let mut named = Vec::new();
        for english in [
            "Dashboard",
            "Browse",
            "Admin",
            "Files",
            "Upload",
            "Orders",
            "Offers",
        ] {
            named.push(in_page_language(&client, english).await);
        }
        assert!(
            sections.contains(&named[0])
                && sections.contains(&named[1])
                && sections.contains(&named[2]),
            "{user_type}: {sections:?}"
        );
        assert_eq!(
            sections.contains(&named[3]),
            user_type != "host",
            "{user_type}: {sections:?}"
        );
        assert_eq!(
            sections.contains(&named[6]),
            user_type != "warehouse",
            "Offers for all but warehouses: {user_type}: {sections:?}"
        );
        let first = user_type == "admin" && save;
        screenshot(&client, first, "dashboard").await;
        browse_stock(fx, &client, user_type, first).await;
        if matches!(user_type, "admin" | "sponsor" | "company") {
            upload_product(fx, &client, user_type, first, downloads.path()).await;
        }
        if user_type == "host" {
            go(&client, &fx.base, "#/files").await;
            assert!(
                !body_text(&client).await.contains(&named[4]),
                "a host never sees Files"
            );
        }
        go(&client, &fx.base, "#/orders").await;
        find(&client, "table").await;
        let orders = body_text(&client).await;
        assert!(orders.contains(&named[5]), "{orders}");
        let order_link = client
            .find_all(Locator::Css("tbody tr td a"))
            .await
            .unwrap();
        if user_type == "warehouse" {
            assert!(
                !orders.contains("gross"),
                "a warehouse never sees order money"
            );
        }
        // Every demo user type has orders in its scope: the first one opens.
        let link = order_link
            .first()
            .unwrap_or_else(|| panic!("{user_type} sees no order: {orders}"));
        link.click().await.unwrap();
        find(&client, "dl.record").await;
        settled(&client).await;
        let page = body_text(&client).await;
        if user_type == "warehouse" {
            for money in ["gross", "net", "vat", "shippingGross"] {
                assert!(
                    !page.split_whitespace().any(|w| w == money),
                    "a warehouse never sees {money}:\n{page}"
                );
            }
        }
        let money = client
            .find_all(Locator::Css("[data-money]"))
            .await
            .unwrap()
            .len();
        if user_type == "warehouse" {
            assert_eq!(money, 0, "a warehouse never sees order money:\n{page}");
        }
        if user_type == "admin" {
            assert!(money > 0, "an admin sees order money:\n{page}");
            screenshot(&client, save, "order").await;
        }
        if first {
            go(&client, &fx.base, "#/orders").await;
            screenshot(&client, true, "orders").await;
        }
        if first {
            // A phone's width: the same sections, nothing cut off.
            client.set_window_size(390, 844).await.unwrap();
            go(&client, &fx.base, "#/dashboard").await;
            screenshot(&client, true, "phone-dashboard").await;
            go(&client, &fx.base, "#/browse/stock").await;
            screenshot(&client, true, "phone-browse").await;
            let overflow = client
                .execute(
                    "return document.documentElement.scrollWidth - window.innerWidth",
                    vec![],
                )
                .await
                .unwrap();
            assert!(
                overflow.as_i64().unwrap_or(0) <= 0,
                "the page scrolls sideways at 390 px: {overflow}"
            );
            client.set_window_size(1280, 900).await.unwrap();
        }
        create_key(fx, &client, user_type, first).await;
        sign_out(&client).await;
    }

    client.close().await.unwrap();
}

/// A browser signed in as a user of its own, on its own WebDriver; the driver stops when
/// dropped.
struct Browser {
    client: Client,
    _driver: Driver,
    _downloads: tempfile::TempDir,
}

/// A user of this type for one browser test, reading English, with a password: made by the
/// admin through the API (the user, then an invitation it accepts), so that no test signs in
/// as a user another test changes. `link` names its company, warehouse or host.
async fn english_user(
    fx: &common::Fixture,
    user_type: &str,
    name: &str,
    link: (&str, &str),
) -> (String, String) {
    user_reading(fx, user_type, name, link, "en").await
}

/// As [`english_user`], for a user whose `detail.lang` is `lang`.
async fn user_reading(
    fx: &common::Fixture,
    user_type: &str,
    name: &str,
    link: (&str, &str),
    lang: &str,
) -> (String, String) {
    let email = format!(
        "{}@portal.brandhub.test",
        common::orders::unique(&format!("portal-{user_type}"))
    );
    let mut body = serde_json::json!({"name": name, "email": email, "type": user_type, "detail": {"lang": lang}});
    body[link.0] = serde_json::json!(link.1);
    let created = fx.post("/api/user", &body).await;
    assert_eq!(
        created.status,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let id = created.ids("user").remove(0);
    let invitation = fx
        .post("/api/invitation", &serde_json::json!({"user": id}))
        .await;
    assert_eq!(
        invitation.status,
        201,
        "{}",
        String::from_utf8_lossy(&invitation.body)
    );
    let token = invitation.json()["token"].as_str().unwrap().to_string();
    let password = "portal-browser-test-password".to_string();
    let set = common::send(
        fx,
        &fx.base,
        reqwest::Method::POST,
        &format!("/api/invitation/{token}"),
        common::As::Nobody,
        &[],
        Some(&serde_json::json!({"password": password})),
    )
    .await;
    assert_eq!(set.status, 200, "{}", String::from_utf8_lossy(&set.body));
    (email, password)
}

/// A warehouse user (English) of the warehouse that ships the place's orders.
async fn warehouse_user(fx: &common::Fixture, place: &common::orders::Place) -> (String, String) {
    english_user(
        fx,
        "warehouse",
        "Sam Picker",
        ("fk_warehouse", &place.warehouse),
    )
    .await
}

/// A company user (English) of the company whose brand the place sells.
async fn company_user(fx: &common::Fixture, place: &common::orders::Place) -> (String, String) {
    let brand = fx
        .get(&format!("/api/brand/{}?fields=fk_company", place.brand))
        .await
        .records("brand");
    let company = common::orders::text(&brand[0]["fk_company"]);
    english_user(fx, "company", "Maria Brandt", ("fk_company", &company)).await
}

/// A browser at `width`×`height`, signed in with these credentials.
async fn browser_as(
    fx: &common::Fixture,
    (email, password): &(String, String),
    width: u32,
    height: u32,
) -> Option<Browser> {
    let (chromium, driver) = browser()?;
    let driver = start_driver(&driver).await;
    let downloads = tempfile::tempdir().unwrap();
    let client = open_browser(&driver, &chromium, downloads.path()).await;
    client.set_window_size(width, height).await.unwrap();
    sign_in(&client, &fx.base, email, password).await;
    Some(Browser {
        client,
        _driver: driver,
        _downloads: downloads,
    })
}

/// An order pushed by the demo host into the place (three lines: 2, 1 and 3 units), dated
/// `order_date` when given; answers the order as the admin reads it.
async fn push_order(
    fx: &common::Fixture,
    place: &common::orders::Place,
    reference: &str,
    order_date: Option<String>,
) -> serde_json::Value {
    let mut body = common::orders::intake_body(place, reference);
    if let Some(date) = order_date {
        body["orderDate"] = serde_json::json!(date);
    }
    let pushed = common::call(fx, reqwest::Method::POST, "/api/order", "host", Some(body)).await;
    common::orders::ok(&pushed, 201)
}

/// The order as the admin reads it now.
async fn order_now(fx: &common::Fixture, id: &str) -> serde_json::Value {
    fx.get(&format!("/api/order/{id}")).await.records("order")[0].clone()
}

/// Accepts every line of an order, as the demo company does through the API.
async fn accept(fx: &common::Fixture, id: &str) {
    let accepted =
        common::orders::patch(fx, "company", id, serde_json::json!({"status": "accepted"})).await;
    common::orders::ok(&accepted, 200);
}

/// A record timestamp `days` before now (UTC).
fn days_ago(days: i64) -> String {
    (chrono::Utc::now() - chrono::Duration::days(days))
        .format("%Y-%m-%dT%H:%M:%S")
        .to_string()
}

/// The order's lines as (barcode, shipQty, returnQty, status, reason), in the order pushed.
fn lines_of(order: &serde_json::Value) -> Vec<(String, i64, i64, String, String)> {
    order["order_orderItem"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                common::orders::text(&l["orderItem_variant"]["barcode"]),
                l["shipQty"].as_i64().unwrap_or(0),
                l["returnQty"].as_i64().unwrap_or(0),
                common::orders::text(&l["status"]),
                common::orders::text(&l["detail"]["reason"]),
            )
        })
        .collect()
}

/// Clicks what leads to another page (another address) and waits until that page is shown:
/// the old page's main part gone, and nothing loading.
async fn click_to_page(client: &Client, element: fantoccini::elements::Element) {
    let old = find(client, "main").await;
    element.click().await.unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    while old.tag_name().await.is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "the page never changed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    settled(client).await;
}

/// Clicks the Orders section, types `text` into Search and applies it; waits for the list.
async fn search_orders(client: &Client, text: &str) {
    let hash = client
        .execute("return location.hash", vec![])
        .await
        .unwrap();
    let hash = hash.as_str().unwrap_or_default();
    if !hash.starts_with("#/orders") || hash.contains("/o/") {
        click_to_page(client, by_text(client, "a", "Orders").await).await;
    }
    let search = labelled(client, "Search").await;
    search.clear().await.unwrap();
    search.send_keys(text).await.unwrap();
    click_to_page(client, by_text(client, "button", "Apply").await).await;
}

/// The references of the orders the list shows, in its order.
async fn listed(client: &Client) -> Vec<String> {
    let mut refs = Vec::new();
    for link in client
        .find_all(Locator::Css("tbody tr td a"))
        .await
        .unwrap()
    {
        refs.push(link.text().await.unwrap());
    }
    refs
}

/// Opens an order of the list by clicking its reference.
async fn open_order(client: &Client, reference: &str) {
    click_to_page(client, by_text(client, "a", reference).await).await;
    wait_for_text(client, &format!("Order {reference}")).await;
}

/// The control a label names inside the part of the page `scope` (an XPath) selects.
async fn labelled_in(client: &Client, scope: &str, label: &str) -> fantoccini::elements::Element {
    let xpath = format!("{scope}//label[normalize-space(.)='{label}']");
    let label = client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::XPath(&xpath))
        .await
        .unwrap_or_else(|e| panic!("no {xpath}: {e}"));
    let id = label
        .attr("for")
        .await
        .unwrap()
        .expect("labels name their control");
    find(client, &format!("[id='{id}']")).await
}

/// The quantity field of the line with this barcode: the input whose accessible name names
/// the line and ends with "quantity".
async fn quantity_of(client: &Client, barcode: &str) -> fantoccini::elements::Element {
    let xpath = format!(
        "//input[contains(@aria-label, '{barcode}') and substring(@aria-label, string-length(@aria-label) - 7) = 'quantity']"
    );
    client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::XPath(&xpath))
        .await
        .unwrap_or_else(|e| panic!("no quantity field of {barcode}: {e}"))
}

async fn type_into(element: fantoccini::elements::Element, text: &str) {
    element.clear().await.unwrap();
    element.send_keys(text).await.unwrap();
}

/// Fails when the page is wider than the window (it would scroll sideways).
async fn assert_fits(client: &Client, what: &str) {
    let overflow = client
        .execute(
            "return document.documentElement.scrollWidth - window.innerWidth",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        overflow.as_i64().unwrap_or(0) <= 0,
        "{what} scrolls sideways by {overflow} px"
    );
}

/// Screenshots of a whole page (the window grown to the page's height for the picture).
async fn full_screenshot(client: &Client, save: bool, name: &str) {
    if !save {
        return;
    }
    let (_, _, width, height) = client.get_window_rect().await.unwrap();
    let page = client
        .execute("return document.documentElement.scrollHeight", vec![])
        .await
        .unwrap()
        .as_u64()
        .unwrap_or(height);
    client
        .set_window_size(width as u32, (page + 140).max(height) as u32)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    screenshot(client, true, name).await;
    client
        .set_window_size(width as u32, height as u32)
        .await
        .unwrap();
}

/// A warehouse ships one order in full and another in part, each from its order page.
async fn warehouse_ships_in_full_and_in_part(fx: &common::Fixture) {
    let save = fx.db == common::Db::Sqlite;
    let place = common::orders::place(fx, 0).await;
    let full = push_order(fx, &place, &common::orders::unique("SHIP-FULL"), None).await;
    let part = push_order(fx, &place, &common::orders::unique("SHIP-PART"), None).await;
    for order in [&full, &part] {
        accept(fx, &common::orders::text(&order["id"])).await;
    }
    let user = warehouse_user(fx, &place).await;
    let Some(b) = browser_as(fx, &user, 1280, 900).await else {
        return;
    };
    let client = &b.client;

    // In full: the quantities as offered (all that is left), a carrier and a tracking number.
    let reference = common::orders::text(&full["brandOrderRef"]);
    search_orders(client, &common::orders::text(&full["hostOrderRef"])).await;
    assert_eq!(listed(client).await, vec![reference.clone()]);
    screenshot(client, save, "orders-search").await;
    open_order(client, &reference).await;
    for (_, barcode) in &place.variants {
        quantity_of(client, barcode).await;
    }
    type_into(labelled(client, "Carrier").await, "DHL").await;
    type_into(labelled(client, "Tracking number").await, "JD014600006281").await;
    full_screenshot(client, save, "order-ship").await;
    by_text(client, "button", "Ship")
        .await
        .click()
        .await
        .unwrap();
    wait_for_text(client, "The order is now: Dispatched.").await;
    full_screenshot(client, save, "order-shipped").await;
    let now = order_now(fx, &common::orders::text(&full["id"])).await;
    assert_eq!(now["status"], "dispatched", "{now}");
    assert_eq!(
        (now["carrier"].as_str(), now["trackingRef"].as_str()),
        (Some("DHL"), Some("JD014600006281"))
    );
    let shipped: Vec<(i64, String)> = lines_of(&now).into_iter().map(|l| (l.1, l.3)).collect();
    assert_eq!(
        shipped,
        vec![(2, "DSP".into()), (1, "DSP".into()), (3, "DSP".into())]
    );

    // In part: one of the two units of the first line, the second line, none of the third.
    let reference = common::orders::text(&part["brandOrderRef"]);
    click_to_page(client, by_text(client, "a", "← Orders").await).await;
    search_orders(client, &common::orders::text(&part["hostOrderRef"])).await;
    open_order(client, &reference).await;
    type_into(quantity_of(client, &place.variants[0].1).await, "1").await;
    type_into(quantity_of(client, &place.variants[2].1).await, "0").await;
    type_into(labelled(client, "Carrier").await, "UPS").await;
    type_into(
        labelled(client, "Tracking number").await,
        "1Z999AA10123456784",
    )
    .await;
    by_text(client, "button", "Ship")
        .await
        .click()
        .await
        .unwrap();
    wait_for_text(client, "The order is now: Part dispatched.").await;
    full_screenshot(client, save, "order-part-shipped").await;
    let now = order_now(fx, &common::orders::text(&part["id"])).await;
    assert_eq!(now["status"], "partDispatched", "{now}");
    assert_eq!(now["trackingRef"], "1Z999AA10123456784");
    let shipped: Vec<(i64, String)> = lines_of(&now).into_iter().map(|l| (l.1, l.3)).collect();
    assert_eq!(
        shipped,
        vec![(1, "ACC".into()), (1, "DSP".into()), (0, "ACC".into())]
    );
    // What is left is offered next: one unit of the first line, three of the third.
    assert_eq!(
        quantity_of(client, &place.variants[0].1)
            .await
            .prop("value")
            .await
            .unwrap()
            .as_deref(),
        Some("1")
    );
    assert_eq!(
        quantity_of(client, &place.variants[2].1)
            .await
            .prop("value")
            .await
            .unwrap()
            .as_deref(),
        Some("3")
    );
    b.client.clone().close().await.unwrap();
}

/// A company accepts an order rejecting one line as out of stock, and cancels another.
async fn company_accepts_rejecting_a_line_and_cancels(fx: &common::Fixture) {
    let save = fx.db == common::Db::Sqlite;
    let place = common::orders::place(fx, 1).await;
    let accepted = push_order(fx, &place, &common::orders::unique("ACCEPT"), None).await;
    let cancelled = push_order(fx, &place, &common::orders::unique("CANCEL"), None).await;
    let user = company_user(fx, &place).await;
    let Some(b) = browser_as(fx, &user, 1280, 900).await else {
        return;
    };
    let client = &b.client;

    let reference = common::orders::text(&accepted["brandOrderRef"]);
    search_orders(client, &reference).await;
    open_order(client, &reference).await;
    // Each line is named by its product's title and its barcode, also where two lines are
    // variants of one product.
    let mut legends = Vec::new();
    for legend in client
        .find_all(Locator::Css("fieldset.line-choice legend"))
        .await
        .unwrap()
    {
        legends.push(legend.text().await.unwrap());
    }
    assert_eq!(legends.len(), 3, "{legends:?}");
    for ((variant, barcode), legend) in place.variants.iter().zip(&legends) {
        let product = fx
            .get(&format!(
                "/api/variant/{variant}?fields=variant_product.title"
            ))
            .await
            .records("variant");
        let title = common::orders::text(&product[0]["variant_product"]["title"]);
        assert!(
            !title.is_empty() && legend.contains(&title) && legend.contains(barcode.as_str()),
            "{legend} names {title} ({barcode})"
        );
    }
    // The second line is out of stock.
    let line = format!("//fieldset[contains(legend, '{}')]", place.variants[1].1);
    labelled_in(client, &line, "Accept or reject")
        .await
        .select_by_label("Reject")
        .await
        .unwrap();
    labelled_in(client, &line, "Reason")
        .await
        .select_by_label("Out of stock")
        .await
        .unwrap();
    full_screenshot(client, save, "order-accept").await;
    by_text(client, "button", "Accept")
        .await
        .click()
        .await
        .unwrap();
    wait_for_text(client, "The order is now: Accepted.").await;
    full_screenshot(client, save, "order-accepted").await;
    let now = order_now(fx, &common::orders::text(&accepted["id"])).await;
    assert_eq!(now["status"], "accepted", "{now}");
    let decided: Vec<(String, String)> = lines_of(&now).into_iter().map(|l| (l.3, l.4)).collect();
    assert_eq!(
        decided,
        vec![
            ("ACC".into(), "".into()),
            ("REJ".into(), "OUT_OF_STOCK".into()),
            ("ACC".into(), "".into())
        ]
    );
    // The page says so in words.
    wait_for_text(client, "Rejected · Out of stock").await;

    // Cancelled, once confirmed.
    let reference = common::orders::text(&cancelled["brandOrderRef"]);
    search_orders(client, &reference).await;
    open_order(client, &reference).await;
    by_text(client, "button", "Cancel order")
        .await
        .click()
        .await
        .unwrap();
    wait_for_text(client, &format!("Cancel order {reference}?")).await;
    assert_eq!(
        order_now(fx, &common::orders::text(&cancelled["id"])).await["status"],
        "new",
        "nothing happens before the confirmation"
    );
    screenshot(client, save, "order-cancel-confirm").await;
    by_text(client, "button", "Yes, cancel the order")
        .await
        .click()
        .await
        .unwrap();
    wait_for_text(client, "The order is now: Cancelled.").await;
    let now = order_now(fx, &common::orders::text(&cancelled["id"])).await;
    assert_eq!(now["status"], "cancelled", "{now}");
    assert!(lines_of(&now).iter().all(|l| l.3 == "CAN"), "{now}");
    b.client.clone().close().await.unwrap();
}

/// A warehouse ships three orders it ticked in the list in one go, each with its tracking
/// number, and sees each outcome.
async fn warehouse_ships_three_selected_orders(fx: &common::Fixture) {
    let save = fx.db == common::Db::Sqlite;
    let place = common::orders::place(fx, 2).await;
    let prefix = common::orders::unique("BULK");
    let mut orders = Vec::new();
    for n in 1..=3 {
        let order = push_order(fx, &place, &format!("{prefix}-{n}"), None).await;
        accept(fx, &common::orders::text(&order["id"])).await;
        orders.push(order);
    }
    let user = warehouse_user(fx, &place).await;
    let Some(b) = browser_as(fx, &user, 1280, 900).await else {
        return;
    };
    let client = &b.client;
    search_orders(client, &prefix).await;
    let mut shown = listed(client).await;
    shown.sort();
    let mut expected: Vec<String> = orders
        .iter()
        .map(|o| common::orders::text(&o["brandOrderRef"]))
        .collect();
    expected.sort();
    assert_eq!(shown, expected);
    for order in &orders {
        let reference = common::orders::text(&order["brandOrderRef"]);
        by_text(client, "input", &format!("Select {reference}"))
            .await
            .click()
            .await
            .unwrap();
    }
    type_into(labelled(client, "Carrier").await, "DPD").await;
    for (n, order) in orders.iter().enumerate() {
        let reference = common::orders::text(&order["brandOrderRef"]);
        type_into(
            labelled(client, &format!("Tracking number for {reference}")).await,
            &format!("{prefix}-P{n}"),
        )
        .await;
    }
    full_screenshot(client, save, "orders-ship-selected").await;
    by_text(client, "button", "Ship selected orders")
        .await
        .click()
        .await
        .unwrap();
    wait_for_text(client, "3 shipped, 0 refused").await;
    for order in &orders {
        wait_for_text(
            client,
            &format!(
                "{}: The order is now: Dispatched.",
                common::orders::text(&order["brandOrderRef"])
            ),
        )
        .await;
    }
    full_screenshot(client, save, "orders-shipped-selected").await;
    for (n, order) in orders.iter().enumerate() {
        let now = order_now(fx, &common::orders::text(&order["id"])).await;
        assert_eq!(now["status"], "dispatched", "{now}");
        assert_eq!(
            (now["carrier"].as_str(), now["trackingRef"].as_str()),
            (Some("DPD"), Some(format!("{prefix}-P{n}").as_str()))
        );
        assert!(lines_of(&now).iter().all(|l| l.3 == "DSP"), "{now}");
    }
    b.client.clone().close().await.unwrap();
}

/// A warehouse finds its late orders: open ones ordered more than two days ago (the default),
/// not a recent one, not one that shipped; with five days, none.
async fn warehouse_finds_late_orders(fx: &common::Fixture) {
    let save = fx.db == common::Db::Sqlite;
    let place = common::orders::place(fx, 3).await;
    let prefix = common::orders::unique("LATE");
    let late = push_order(fx, &place, &format!("{prefix}-old"), Some(days_ago(4))).await;
    let recent = push_order(fx, &place, &format!("{prefix}-new"), Some(days_ago(0))).await;
    let shipped = push_order(fx, &place, &format!("{prefix}-shipped"), Some(days_ago(4))).await;
    for order in [&late, &recent, &shipped] {
        accept(fx, &common::orders::text(&order["id"])).await;
    }
    let dispatched = common::orders::patch(
        fx,
        "warehouse",
        &common::orders::text(&shipped["id"]),
        serde_json::json!({"status": "dispatched"}),
    )
    .await;
    common::orders::ok(&dispatched, 200);
    let user = warehouse_user(fx, &place).await;
    let Some(b) = browser_as(fx, &user, 1280, 900).await else {
        return;
    };
    let client = &b.client;
    search_orders(client, &prefix).await;
    assert_eq!(listed(client).await.len(), 3);
    labelled(client, "Late orders only")
        .await
        .click()
        .await
        .unwrap();
    assert_eq!(
        labelled(client, "Late after (days)")
            .await
            .prop("value")
            .await
            .unwrap()
            .as_deref(),
        Some("2")
    );
    click_to_page(client, by_text(client, "button", "Apply").await).await;
    assert_eq!(
        listed(client).await,
        vec![common::orders::text(&late["brandOrderRef"])]
    );
    wait_for_text(client, "4 days").await;
    full_screenshot(client, save, "orders-late").await;
    // The API agrees: the same filter in a URL (a comparison on the order date).
    let cutoff = days_ago(2);
    let api = fx
        .get(&format!(
            "/api/order?hostOrderRef={prefix}@&status=new&status=accepted&status=partDispatched&orderDate=%3C{cutoff}"
        ))
        .await;
    assert_eq!(api.ids("order"), vec![common::orders::text(&late["id"])]);
    // Late after five days: none of them yet.
    type_into(labelled(client, "Late after (days)").await, "5").await;
    click_to_page(client, by_text(client, "button", "Apply").await).await;
    wait_for_text(client, "No orders match.").await;
    b.client.clone().close().await.unwrap();
}

/// On a phone (390 px wide) a warehouse finds an order and ships it; no page scrolls sideways.
async fn warehouse_ships_on_a_phone(fx: &common::Fixture) {
    let save = fx.db == common::Db::Sqlite;
    let place = common::orders::place(fx, 4).await;
    let order = push_order(fx, &place, &common::orders::unique("PHONE"), None).await;
    accept(fx, &common::orders::text(&order["id"])).await;
    let user = warehouse_user(fx, &place).await;
    let Some(b) = browser_as(fx, &user, 390, 844).await else {
        return;
    };
    let client = &b.client;
    assert_fits(client, "the dashboard").await;
    let reference = common::orders::text(&order["brandOrderRef"]);
    search_orders(client, &reference).await;
    assert_fits(client, "the order list").await;
    full_screenshot(client, save, "phone-orders").await;
    open_order(client, &reference).await;
    assert_fits(client, "the order page").await;
    type_into(labelled(client, "Carrier").await, "Royal Mail").await;
    type_into(labelled(client, "Tracking number").await, "RM123456785GB").await;
    full_screenshot(client, save, "phone-order").await;
    by_text(client, "button", "Ship")
        .await
        .click()
        .await
        .unwrap();
    wait_for_text(client, "The order is now: Dispatched.").await;
    assert_fits(client, "the shipped order's page").await;
    screenshot(client, save, "phone-order-shipped").await;
    let now = order_now(fx, &common::orders::text(&order["id"])).await;
    assert_eq!(now["status"], "dispatched", "{now}");
    assert_eq!(now["trackingRef"], "RM123456785GB");
    b.client.clone().close().await.unwrap();
}

/// Chooses a record in the searchable list labelled `label`: types `search`, then clicks the
/// option that reads `option`.
async fn pick(client: &Client, label: &str, search: &str, option: &str) {
    type_into(labelled_in(client, "//form", label).await, search).await;
    // The list is searched again as one types: wait for the last search's answer.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let xpath = format!("//li[@role='option' and normalize-space(.)='{option}']");
    let found = match client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::XPath(&xpath))
        .await
    {
        Ok(found) => found,
        Err(e) => panic!(
            "no option '{option}' for {label} ({e}) in:\n{}",
            body_text(client).await
        ),
    };
    found.click().await.unwrap();
}

/// Fills the text fields of the form on the page, each by its label.
async fn fill(client: &Client, fields: &[(&str, &str)]) {
    for (label, value) in fields {
        type_into(labelled_in(client, "//form", label).await, value).await;
    }
}

/// The options of the form's Language list: (value, text).
async fn language_choices(client: &Client) -> Vec<(String, String)> {
    let id = labelled_in(client, "//form", "Language")
        .await
        .attr("id")
        .await
        .unwrap()
        .unwrap_or_default();
    let options = client
        .execute(
            "return [...document.getElementById(arguments[0]).options].map((o) => [o.value, o.text]);",
            vec![serde_json::json!(id)],
        )
        .await
        .unwrap();
    serde_json::from_value(options).unwrap()
}

/// Opens the Admin section's form for a new record by its link ("New company"), from the
/// Admin page.
async fn open_new(client: &Client, base: &str, link: &str) {
    go(client, base, "#/admin").await;
    click_to_page(client, by_text(client, "a", link).await).await;
    find(client, "form.record-form").await;
}

/// Submits the form by its button and waits for the notice that the record was created.
async fn create(client: &Client, button: &str, notice: &str) {
    by_text(client, "button", button)
        .await
        .click()
        .await
        .unwrap();
    wait_for_text(client, notice).await;
}

/// The one record of a resource whose `code` (or other field) is `value`, as the admin reads it.
async fn one(fx: &common::Fixture, resource: &str, filter: &str) -> serde_json::Value {
    let mut found = fx
        .get(&format!("/api/{resource}?{filter}"))
        .await
        .records(resource);
    assert_eq!(found.len(), 1, "{resource}?{filter}: {found:?}");
    found.remove(0)
}

/// An admin sets up a customer in the portal, by clicking and typing only: a company with a
/// brand and a warehouse, a host with a store, the brand store that links them (with its stock
/// rule and price adjustment), and a user of the company, whom it invites; the user sets its
/// password from the invitation, signs in and sees only its company. Each record is read
/// back through the API.
async fn admin_sets_up_a_customer(fx: &common::Fixture) {
    let save = fx.db == common::Db::Sqlite;
    let Some((chromium, driver)) = browser() else {
        return;
    };
    let driver = start_driver(&driver).await;
    let downloads = tempfile::tempdir().unwrap();
    let client = &open_browser(&driver, &chromium, downloads.path()).await;
    let admin = fx.credential("admin");
    sign_in(
        client,
        &fx.base,
        &admin.email,
        &demo_password(admin.user_type),
    )
    .await;
    let n = common::unique_number() % 1_000_000;
    let text = common::orders::text;

    // The company.
    let company_name = format!("Nordlicht Textil {n}");
    let company_code = format!("NLT{n}");
    open_new(client, &fx.base, "New company").await;
    fill(
        client,
        &[
            ("Name", &company_name),
            ("Code", &company_code),
            ("Country", "Germany"),
            ("VAT number", "DE123456789"),
            ("Contact email", "orders@nordlicht.example"),
        ],
    )
    .await;
    full_screenshot(client, save, "setup-company").await;
    create(
        client,
        "Create company",
        &format!("Company {company_name} ({company_code}) is created."),
    )
    .await;
    let company = one(fx, "company", &format!("code={company_code}")).await;
    assert_eq!(company["name"], company_name.as_str());
    assert_eq!(company["detail"]["vatNumber"], "DE123456789");
    let company_id = text(&company["id"]);
    let company_label = format!("{company_name} ({company_code})");

    // Its brand and its warehouse, the company chosen from a list by name.
    let brand_name = format!("Nordlicht {n}");
    let brand_code = format!("NLB{n}");
    open_new(client, &fx.base, "New brand").await;
    pick(client, "Company", &company_name, &company_label).await;
    fill(
        client,
        &[
            ("Name", &brand_name),
            ("Code", &brand_code),
            ("Website", "https://nordlicht.example"),
        ],
    )
    .await;
    full_screenshot(client, save, "setup-brand").await;
    create(
        client,
        "Create brand",
        &format!("Brand {brand_name} ({brand_code}) is created."),
    )
    .await;
    let brand = one(fx, "brand", &format!("code={brand_code}")).await;
    assert_eq!(text(&brand["fk_company"]), company_id);
    assert_eq!(brand["detail"]["website"], "https://nordlicht.example");

    let warehouse_name = format!("Nordlicht Lager Bremen {n}");
    let warehouse_code = format!("NLW{n}");
    open_new(client, &fx.base, "New warehouse").await;
    pick(client, "Company", &company_name, &company_label).await;
    fill(
        client,
        &[
            ("Code", &warehouse_code),
            ("Name", &warehouse_name),
            ("Town", "Bremen"),
            ("Country code", "DE"),
        ],
    )
    .await;
    create(
        client,
        "Create warehouse",
        &format!("Warehouse {warehouse_name} ({warehouse_code}) is created."),
    )
    .await;
    let warehouse = one(fx, "warehouse", &format!("code={warehouse_code}")).await;
    assert_eq!(text(&warehouse["fk_company"]), company_id);
    assert_eq!(warehouse["detail"]["town"], "Bremen");

    // A host and its store.
    let host_name = format!("Marktplatz {n}");
    let host_code = format!("MP{n}");
    open_new(client, &fx.base, "New host").await;
    fill(
        client,
        &[
            ("Name", &host_name),
            ("Code", &host_code),
            ("Website", "https://marktplatz.example"),
        ],
    )
    .await;
    create(
        client,
        "Create host",
        &format!("Host {host_name} ({host_code}) is created."),
    )
    .await;
    let host = one(fx, "host", &format!("code={host_code}")).await;
    let store_name = format!("Marktplatz Deutschland {n}");
    let store_code = format!("MPDE{n}");
    open_new(client, &fx.base, "New store").await;
    pick(
        client,
        "Host",
        &host_name,
        &format!("{host_name} ({host_code})"),
    )
    .await;
    fill(
        client,
        &[
            ("Name", &store_name),
            ("Code", &store_code),
            ("Currency", "EUR"),
            ("Country code", "DE"),
        ],
    )
    .await;
    full_screenshot(client, save, "setup-store").await;
    create(
        client,
        "Create store",
        &format!("Store {store_name} · {host_name} ({store_code}) is created."),
    )
    .await;
    let store = one(fx, "store", &format!("code={store_code}")).await;
    assert_eq!(store["fk_host"], host["id"]);
    assert_eq!(store["currency"], "EUR");

    // The brand store: the brand sells in the store, shipped from the warehouse, with its
    // stock rule and a price adjustment.
    open_new(client, &fx.base, "New brand store").await;
    pick(
        client,
        "Brand",
        &brand_name,
        &format!("{brand_name} ({brand_code})"),
    )
    .await;
    pick(
        client,
        "Store",
        &store_name,
        &format!("{store_name} · {host_name} ({store_code})"),
    )
    .await;
    pick(
        client,
        "Warehouse",
        &warehouse_name,
        &format!("{warehouse_name} ({warehouse_code})"),
    )
    .await;
    // The rules' words are chosen from lists, the amounts typed.
    for (label, value) in [("Stock offered", "live"), ("Price adjustment", "percent")] {
        labelled_in(client, "//form", label)
            .await
            .select_by_value(value)
            .await
            .unwrap();
    }
    fill(
        client,
        &[
            ("Share of stock offered (%)", "90"),
            ("Adjustment amount", "12.5"),
        ],
    )
    .await;
    full_screenshot(client, save, "setup-brand-store").await;
    by_text(client, "button", "Create brand store")
        .await
        .click()
        .await
        .unwrap();
    wait_for_text(
        client,
        &format!("Brand store {brand_name} → {store_name} · {host_name} is created."),
    )
    .await;
    let brand_store = one(
        fx,
        "brandStore",
        &format!("fk_brand={}", text(&brand["id"])),
    )
    .await;
    assert_eq!(brand_store["fk_store"], store["id"]);
    assert_eq!(brand_store["fk_warehouse"], warehouse["id"]);
    assert_eq!(brand_store["detail"]["stockType"], "live");
    assert_eq!(brand_store["detail"]["adjustType"], "percent");
    assert_eq!(brand_store["detail"]["adjustValue"], 12.5);
    assert_eq!(brand_store["detail"]["stockPercent"], 90);

    // A user of the company, then its invitation.
    let email = format!("lena.{n}@nordlicht.example");
    open_new(client, &fx.base, "New user").await;
    fill(client, &[("Name", "Lena Vogt"), ("Email", &email)]).await;
    labelled_in(client, "//form", "User type")
        .await
        .select_by_value("company")
        .await
        .unwrap();
    // The language from the list of those the portal speaks, the page's chosen at first.
    let language = labelled_in(client, "//form", "Language").await;
    assert_eq!(
        language_choices(client).await,
        [("en", "English"), ("de", "Deutsch")].map(|(v, w)| (v.to_string(), w.to_string()))
    );
    assert_eq!(language.prop("value").await.unwrap().as_deref(), Some("en"));
    language.select_by_value("de").await.unwrap();
    pick(client, "Company", &company_name, &company_label).await;
    full_screenshot(client, save, "setup-user").await;
    create(client, "Create user", "User Lena Vogt is created.").await;
    let user = one(fx, "user", &format!("email={email}")).await;
    assert_eq!(text(&user["fk_company"]), company_id);
    assert_eq!(user["type"], "company");
    assert_eq!(user["detail"]["lang"], "de");
    // Back to English through the form that changes the user, so that the steps below read
    // as they are written.
    go(
        client,
        &fx.base,
        &format!("#/admin/edit/user/{}", text(&user["id"])),
    )
    .await;
    labelled_in(client, "//form", "Language")
        .await
        .select_by_value("en")
        .await
        .unwrap();
    by_text(client, "button", "Save changes")
        .await
        .click()
        .await
        .unwrap();
    wait_for_text(client, "is saved.").await;
    assert_eq!(
        one(fx, "user", &format!("email={email}")).await["detail"]["lang"],
        "en"
    );

    // A user whose language the portal does not speak (demo data may hold others) keeps it:
    // shown as it is in the list, and left as it is by a change of another field.
    let other = format!("pierre.{n}@nordlicht.example");
    let created = fx
        .post(
            "/api/user",
            &serde_json::json!({"name": "Pierre Roux", "email": other, "type": "company",
                                "fk_company": company_id, "detail": {"lang": "fr"}}),
        )
        .await;
    assert_eq!(
        created.status,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let pierre = created.ids("user").remove(0);
    go(client, &fx.base, &format!("#/admin/edit/user/{pierre}")).await;
    let language = labelled_in(client, "//form", "Language").await;
    assert_eq!(language.prop("value").await.unwrap().as_deref(), Some("fr"));
    assert!(
        language_choices(client)
            .await
            .contains(&("fr".to_string(), "fr".to_string()))
    );
    fill(client, &[("Name", "Pierre Roux-Vogt")]).await;
    by_text(client, "button", "Save changes")
        .await
        .click()
        .await
        .unwrap();
    wait_for_text(client, "is saved.").await;
    let pierre = one(fx, "user", &format!("email={other}")).await;
    assert_eq!(
        (pierre["name"].as_str(), pierre["detail"]["lang"].as_str()),
        (Some("Pierre Roux-Vogt"), Some("fr"))
    );
    go(client, &fx.base, "#/admin").await;
    by_text(client, "button", &format!("Invite {email}"))
        .await
        .click()
        .await
        .unwrap();
    let link = find(client, "td .secret-value").await.text().await.unwrap();
    full_screenshot(client, save, "setup-invitation").await;
    let token = link.rsplit('/').next().unwrap().to_string();
    sign_out(client).await;

    // The user sets its password from the link, is told so, signs in and sees its company
    // and no other.
    client
        .goto(&format!("{}/#/invitation/{token}", fx.base))
        .await
        .unwrap();
    let password = "a-long-new-password-42";
    labelled(client, "New password")
        .await
        .send_keys(password)
        .await
        .unwrap();
    by_text(client, "button", "Set password")
        .await
        .click()
        .await
        .unwrap();
    wait_for_text(client, "Your password is set. Sign in with it.").await;
    screenshot(client, save, "setup-password-set").await;
    sign_in(client, &fx.base, &email, password).await;
    go(client, &fx.base, "#/browse/company").await;
    find(client, "table").await;
    wait_for_text(client, &company_name).await;
    let rows = client
        .find_all(Locator::Css("tbody tr"))
        .await
        .unwrap()
        .len();
    assert_eq!(
        rows,
        1,
        "the user sees its one company:\n{}",
        body_text(client).await
    );
    screenshot(client, save, "setup-user-signed-in").await;
    let session = fx
        .client()
        .post(format!("{}/api/session", fx.base))
        .json(&serde_json::json!({"email": email, "password": password}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        session.status(),
        201,
        "the password set in the page signs in"
    );
    let key = session.json::<serde_json::Value>().await.unwrap()["key"]
        .as_str()
        .unwrap()
        .to_string();
    let companies = fx
        .client()
        .get(format!("{}/api/company?fields=id", fx.base))
        .basic_auth(&email, Some(&key))
        .send()
        .await
        .unwrap()
        .json::<serde_json::Value>()
        .await
        .unwrap();
    let seen: Vec<&str> = companies["response"]["company"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(seen, [company_id.as_str()]);
    client.clone().close().await.unwrap();
}

/// The smaller things: an empty sign-in says so plainly; the skip link moves to the content
/// without leaving the page; a host's dashboard shows no files; a warehouse is offered only
/// the uploads it may make; the set-up pages fit a 390 px phone.
async fn small_things_hold(fx: &common::Fixture) {
    let save = fx.db == common::Db::Sqlite;
    let Some((chromium, driver)) = browser() else {
        return;
    };
    let driver = start_driver(&driver).await;
    let downloads = tempfile::tempdir().unwrap();
    let client = &open_browser(&driver, &chromium, downloads.path()).await;
    client.goto(&format!("{}/", fx.base)).await.unwrap();
    by_text(client, "button", "Sign in")
        .await
        .click()
        .await
        .unwrap();
    let problem = find(client, "form .problem").await.text().await.unwrap();
    assert_eq!(problem, "Enter your email and your password.");

    let host = fx.credential("host");
    sign_in(
        client,
        &fx.base,
        &host.email,
        &demo_password(host.user_type),
    )
    .await;
    let dashboard = body_text(client).await;
    let pending = in_page_language(client, "Files pending").await;
    assert!(
        !dashboard.contains(&pending),
        "a host uploads nothing:\n{dashboard}"
    );
    // As a keyboard user takes it: the link shows once focused; Enter follows it.
    let skip = find(client, "a.skip").await;
    skip.send_keys("\u{E007}").await.unwrap();
    let focused = client
        .execute("return [location.hash, document.activeElement.id]", vec![])
        .await
        .unwrap();
    assert_eq!(
        focused,
        serde_json::json!(["#/dashboard", "main"]),
        "the skip link stays on the page"
    );
    assert!(
        !body_text(client)
            .await
            .contains(&in_page_language(client, "This page does not exist.").await)
    );
    sign_out(client).await;

    let warehouse = fx.credential("warehouse");
    sign_in(
        client,
        &fx.base,
        &warehouse.email,
        &demo_password(warehouse.user_type),
    )
    .await;
    go(client, &fx.base, "#/files").await;
    find(client, "select[name=fileType] option").await;
    let mut offered = Vec::new();
    for option in client
        .find_all(Locator::Css("select[name=fileType] option"))
        .await
        .unwrap()
    {
        offered.push(option.attr("value").await.unwrap().unwrap_or_default());
    }
    assert_eq!(
        offered,
        ["stock", "orderDispatch"],
        "a warehouse is offered its uploads only"
    );
    sign_out(client).await;

    let admin = fx.credential("admin");
    client.set_window_size(390, 844).await.unwrap();
    sign_in(
        client,
        &fx.base,
        &admin.email,
        &demo_password(admin.user_type),
    )
    .await;
    for (hash, name) in [
        ("#/dashboard", None),
        ("#/admin", Some("phone-admin")),
        ("#/admin/new/brandStore", Some("phone-setup-brand-store")),
        ("#/admin/new/user", None),
        ("#/files", Some("phone-files")),
        ("#/browse/company", None),
    ] {
        go(client, &fx.base, hash).await;
        if let Some(name) = name {
            full_screenshot(client, save, name).await;
        }
        let wide = client.execute("return [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5 && !e.closest('.table-wrap')).slice(0, 5).map((e) => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))", vec![]).await.unwrap();
        assert_fits(client, &format!("{hash} (wider: {wide})")).await;
    }
    client.clone().close().await.unwrap();
}

/// A host reads what its stores can sell in the Offers table: as many rows as the API says,
/// columns in words, and a record's page.
async fn host_reads_its_offers(fx: &common::Fixture) {
    let host = fx
        .get(&format!(
            "/api/user/{}?fields=fk_host",
            fx.credential("host").user_id
        ))
        .await
        .records("user")[0]["fk_host"]
        .as_str()
        .unwrap()
        .to_string();
    let who = english_user(fx, "host", "Olivia Offers", ("fk_host", &host)).await;
    let Some(browser) = browser_as(fx, &who, 1280, 900).await else {
        return;
    };
    let client = &browser.client;
    let save = fx.db == common::Db::Sqlite;
    let expected = fx
        .get(&format!("/api/offer/count?offer_store.fk_host={host}"))
        .await
        .json()["count"]
        .as_u64()
        .unwrap();
    assert!(expected > 0, "the demo host's stores have offers");
    go(client, &fx.base, "#/browse/offer").await;
    settled(client).await;
    wait_for_text(client, &format!("{} records", grouped(expected, "en"))).await;
    let text = body_text(client).await;
    for heading in ["Available", "Price in effect", "Status", "Host's SKU"] {
        assert!(text.contains(heading), "a column {heading}: {text}");
    }
    // The store is headed as what it is, not by its field ("Name").
    let headings = texts_of(client, "thead th").await;
    assert!(
        headings.iter().any(|h| h == "Store") && !headings.iter().any(|h| h == "Name"),
        "{headings:?}"
    );
    // At 1280 px the table fits or scrolls in its own box: the page never scrolls sideways.
    assert_fits(client, "the offers table at 1280 px").await;
    assert!(
        !text.contains("Share of stock offered"),
        "no rule of the brand store is shown to a host"
    );
    let rows = client.find_all(Locator::Css("tbody tr")).await.unwrap();
    assert_eq!(rows.len() as u64, expected.min(25));
    full_screenshot(client, save, "browse-offers").await;
    find(client, "tbody tr td a").await.click().await.unwrap();
    find(client, "dl.record").await;
    settled(client).await;
    let text = body_text(client).await;
    assert!(
        text.contains("Available") && text.contains("Currency"),
        "{text}"
    );
    browser.client.clone().close().await.unwrap();
}

/// A host of its own with two stores selling one brand of its own, made by the admin through
/// the API: four products of three variants each, some out of stock, a few offers with the
/// host's SKUs already set. Answers the host, its stores (id and name) and the host user's
/// credentials.
struct OffersWorld {
    host: String,
    stores: Vec<(String, String)>,
    user: (String, String),
}

/// An id of a record the admin has just created.
async fn created(fx: &common::Fixture, resource: &str, body: serde_json::Value) -> Vec<String> {
    let answer = fx.post(&format!("/api/{resource}"), &body).await;
    assert_eq!(
        answer.status,
        201,
        "{resource}: {}",
        String::from_utf8_lossy(&answer.body)
    );
    answer.ids(resource)
}

/// A product of the offers' brand: its title, colour, three sizes, price, RRP and the units
/// in stock of each size.
type Article = (
    &'static str,
    &'static str,
    [&'static str; 3],
    f64,
    f64,
    [i64; 3],
);

async fn offers_world(fx: &common::Fixture) -> OffersWorld {
    let tag = common::unique_number();
    let company = created(
        fx,
        "company",
        serde_json::json!({"name": "Fjellwerk Outdoor GmbH", "code": format!("FJ{tag}")}),
    )
    .await
    .remove(0);
    let brand = created(
        fx,
        "brand",
        serde_json::json!({"fk_company": company, "name": "Fjellwerk", "code": format!("FJB{tag}")}),
    )
    .await
    .remove(0);
    let warehouse = created(
        fx,
        "warehouse",
        serde_json::json!({"fk_company": company, "name": "Fjellwerk Hamburg", "code": format!("FJW{tag}")}),
    )
    .await
    .remove(0);
    let host = created(
        fx,
        "host",
        serde_json::json!({"name": "Nordlicht Handel", "code": format!("NL{tag}")}),
    )
    .await
    .remove(0);
    let mut stores = Vec::new();
    for (name, code) in [("Nordlicht Online", "WEB"), ("Nordlicht Outlet", "OUT")] {
        let id = created(
            fx,
            "store",
            serde_json::json!({"fk_host": host, "name": name, "code": code, "currency": "EUR"}),
        )
        .await
        .remove(0);
        stores.push((id, name.to_string()));
    }
    let catalogue: [Article; 4] = [
        (
            "Merino Crew Jumper",
            "Navy",
            ["S", "M", "L"],
            89.0,
            99.0,
            [14, 0, 6],
        ),
        (
            "Alpine Down Jacket",
            "Forest Green",
            ["M", "L", "XL"],
            249.0,
            279.0,
            [3, 8, 0],
        ),
        (
            "Trail Softshell Trousers",
            "Charcoal",
            ["S", "M", "L"],
            119.0,
            119.0,
            [1, 22, 9],
        ),
        (
            "Ridge Wool Beanie",
            "Rust",
            ["One size", "Kids", "XL"],
            29.95,
            34.95,
            [40, 0, 1],
        ),
    ];
    let mut variants = Vec::new();
    let mut stock = Vec::new();
    for (p, (title, colour, sizes, price, rrp, units)) in catalogue.iter().enumerate() {
        let product = created(
            fx,
            "product",
            serde_json::json!({"fk_brand": brand, "code": format!("FJ-{p}"), "title": title, "status": "active"}),
        )
        .await
        .remove(0);
        for (s, size) in sizes.iter().enumerate() {
            variants.push(serde_json::json!({
                "fk_product": product, "barcode": format!("40{:011}", (tag + (p * 3 + s) as u64) % 100_000_000_000),
                "colour": colour, "size": size, "detail": {"price": price, "rrp": rrp},
            }));
            stock.push(units[s]);
        }
    }
    let variant_ids = created(fx, "variant", serde_json::json!(variants)).await;
    let rows: Vec<serde_json::Value> = variant_ids
        .iter()
        .zip(&stock)
        .map(|(v, n)| serde_json::json!({"fk_warehouse": warehouse, "fk_variant": v, "inStock": n}))
        .collect();
    created(fx, "stock", serde_json::json!(rows)).await;
    // The outlet is offered half of what the warehouse has.
    let mut brand_stores = Vec::new();
    for ((store, _), detail) in stores.iter().zip([
        serde_json::json!({"stockType": "live"}),
        serde_json::json!({"stockType": "live", "stockPercent": 50}),
    ]) {
        brand_stores.push(
            created(
                fx,
                "brandStore",
                serde_json::json!({"fk_brand": brand, "fk_store": store, "fk_warehouse": warehouse, "detail": detail}),
            )
            .await
            .remove(0),
        );
    }
    // Some SKUs the host has given already, in both stores.
    let skus: Vec<serde_json::Value> = variants
        .iter()
        .take(4)
        .enumerate()
        .flat_map(|(i, v)| {
            let barcode = v["barcode"].clone();
            brand_stores.iter().enumerate().map(move |(s, bs)| {
                serde_json::json!({"fk_brandStore": bs, "barcode": barcode, "hostSku": format!("NL-{}-{:04}", ["W", "O"][s], 1201 + i)})
            })
        })
        .collect();
    let set = fx
        .post("/api/offer/hostSku", &serde_json::json!(skus))
        .await;
    assert_eq!(set.status, 200, "{}", String::from_utf8_lossy(&set.body));
    let user = english_user(fx, "host", "Jana Lindqvist", ("fk_host", &host)).await;
    OffersWorld { host, stores, user }
}

/// The count the admin reads for a query of offers.
async fn offer_count(fx: &common::Fixture, query: &str) -> u64 {
    fx.get(&format!("/api/offer/count?{query}")).await.json()["count"]
        .as_u64()
        .unwrap()
}

/// Waits until the offers table says it shows `count` offers and every row has drawn.
async fn wait_for_offers(client: &Client, count: u64) {
    let words = if count == 1 {
        "1 offer".to_string()
    } else {
        format!("{} offers", grouped(count, "en"))
    };
    wait_for_text(client, &format!("{words} · Page")).await;
    settled(client).await;
}

/// Waits until the export of the offers shown names `needle` (the page drawn for the filters
/// asked); answers its URL.
async fn wait_for_export(client: &Client, needle: &str) -> String {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let url = client
            .execute(
                "const b = document.querySelector('button[data-export]'); return b ? b.dataset.export : ''",
                vec![],
            )
            .await
            .unwrap();
        let url = url.as_str().unwrap_or_default().to_string();
        if url.contains(needle) {
            settled(client).await;
            return url;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the export never named {needle}: {url}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The data of each row of the offers table: (offer id, status, store cell's text).
async fn offer_rows(client: &Client) -> Vec<(String, String, String)> {
    let rows = client
        .execute(
            "return [...document.querySelectorAll('table.offers tbody tr[data-offer]')].map((r) =>
               [r.dataset.offer, r.dataset.status, r.querySelector('td.store').innerText])",
            vec![],
        )
        .await
        .unwrap();
    serde_json::from_value(rows).unwrap()
}

/// A host works its offers in the Offers view: the table in words, the out-of-stock shortcut,
/// a store picked, a SKU set by clicking and typing (and read back through the API), a SKU
/// another offer of the store has refused in place, changed since a day, the feed exported as
/// CSV for the filters shown, and the view in German.
async fn host_works_its_offers(fx: &common::Fixture) {
    let world = offers_world(fx).await;
    let Some(browser) = browser_as(fx, &world.user, 1280, 900).await else {
        return;
    };
    let client = &browser.client;
    let save = fx.db == common::Db::Sqlite;
    let host = &world.host;
    let (store, store_name) = world.stores[0].clone();

    // The dashboard counts the offers out of stock; the section is in the menu.
    let out = offer_count(fx, &format!("offer_store.fk_host={host}&status=outOfStock")).await;
    let tile = tile_value(client, "offersOut").await;
    assert_eq!(
        tile,
        Some(out as i64),
        "the dashboard's offers out of stock"
    );
    let sections = nav_sections(client).await;
    assert!(sections.contains(&"Offers".to_string()), "{sections:?}");
    click_to_page(client, by_text(client, "a", "Offers").await).await;
    let all = offer_count(fx, &format!("offer_store.fk_host={host}")).await;
    assert_eq!(all, 24, "two stores of twelve variants");
    wait_for_offers(client, all).await;
    let headings = texts_of(client, "table.offers thead th").await;
    let headings: Vec<String> = headings
        .iter()
        .map(|h| h.trim_end_matches([' ', '▲', '▼']).to_string())
        .collect();
    assert_eq!(
        headings,
        [
            "Product",
            "Colour",
            "Size",
            "Barcode",
            "Store",
            "Your SKU",
            "Available",
            "Price",
            "Status",
            "Last changed"
        ],
    );
    let text = body_text(client).await;
    for words in [
        "Merino Crew Jumper",
        "Nordlicht Outlet",
        "NL-W-1201",
        "€89.00",
        "Out of stock",
        "Active",
    ] {
        assert!(text.contains(words), "{words} in:\n{text}");
    }
    assert!(
        !text.contains("outOfStock") && !text.contains("fk_store"),
        "{text}"
    );
    // At 1280 px the table fits its box: no column is cut off, the page never scrolls sideways.
    assert_fits(client, "the offers at 1280 px").await;
    let cut = client
        .execute(
            "const wrap = document.querySelector('.table-wrap');
             return wrap.scrollWidth - wrap.clientWidth",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        cut.as_i64().unwrap_or(1) <= 0,
        "the offers table is cut off by {cut} px"
    );

    // Out of stock: one click, every row out of stock, as many as the API says.
    find(client, "nav.tabs a[data-tab=outOfStock]")
        .await
        .click()
        .await
        .unwrap();
    assert!(out > 0 && out < all);
    wait_for_offers(client, out).await;
    let rows = offer_rows(client).await;
    assert_eq!(rows.len() as u64, out);
    assert!(
        rows.iter().all(|(_, status, _)| status == "outOfStock"),
        "{rows:?}"
    );

    // A store picked: its offers alone, still out of stock only.
    find(client, "form.offer-filters select[name=store]")
        .await
        .select_by_value(&store)
        .await
        .unwrap();
    let in_store = offer_count(fx, &format!("fk_store={store}&status=outOfStock")).await;
    assert!(in_store >= 2, "two offers to set SKUs on");
    wait_for_offers(client, in_store).await;
    let rows = offer_rows(client).await;
    assert!(
        rows.iter()
            .all(|(_, status, name)| status == "outOfStock" && name.starts_with(&store_name)),
        "{rows:?}"
    );

    // A SKU set in place: click it, type, Enter; the API reads it back.
    let sku = format!("NL-W-{}", common::unique_number() % 100_000);
    let (first, second) = (rows[0].0.clone(), rows[1].0.clone());
    find(client, &format!("button.sku-edit[data-offer='{first}']"))
        .await
        .click()
        .await
        .unwrap();
    type_into(
        find(client, &format!("input.sku-input[data-offer='{first}']")).await,
        &format!("{sku}\u{E007}"),
    )
    .await;
    let saved = find(client, &format!("button.sku-edit[data-offer='{first}']")).await;
    assert_eq!(saved.text().await.unwrap(), sku);
    let offer = fx
        .get(&format!("/api/offer/{first}"))
        .await
        .records("offer");
    assert_eq!(offer[0]["hostSku"], sku.as_str(), "{offer:?}");

    // The same SKU on another offer of the store: refused in place, with the reason.
    find(client, &format!("button.sku-edit[data-offer='{second}']"))
        .await
        .click()
        .await
        .unwrap();
    let input = find(client, &format!("input.sku-input[data-offer='{second}']")).await;
    type_into(input, &format!("{sku}\u{E007}")).await;
    let problem = find(client, "td.sku .problem[data-problem='409']").await;
    assert!(
        problem
            .text()
            .await
            .unwrap()
            .contains("Another offer of this store already has this SKU."),
        "{}",
        problem.text().await.unwrap()
    );
    let offer = fx
        .get(&format!("/api/offer/{second}"))
        .await
        .records("offer");
    assert_ne!(offer[0]["hostSku"], sku.as_str());
    find(client, &format!("input.sku-input[data-offer='{second}']"))
        .await
        .send_keys("\u{E00C}")
        .await
        .unwrap();
    find(client, &format!("button.sku-edit[data-offer='{second}']")).await;

    // The feed of what is shown: the link names the filters, the download holds those offers.
    let export = find(client, "button[data-export]").await;
    let url = export.attr("data-export").await.unwrap().unwrap();
    for part in [
        "/api/offer?",
        "status=outOfStock",
        &format!("fk_store={store}"),
        "format=csv",
    ] {
        assert!(url.contains(part), "{part} in {url}");
    }
    export.click().await.unwrap();
    let downloads = browser._downloads.path();
    let deadline = std::time::Instant::now() + WAIT;
    let csv = loop {
        let done = std::fs::read_dir(downloads)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|x| x == "csv"));
        if let Some(path) = done {
            break std::fs::read_to_string(path).unwrap();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the feed was not downloaded"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(csv.lines().count() as u64, in_store + 1, "{csv}");
    assert!(csv.contains(&sku), "{csv}");

    // Changed since a day: today's changes are all of the store's (made today); none since
    // tomorrow.
    let today = chrono::Utc::now().date_naive();
    for (day, expected) in [
        (
            today,
            offer_count(
                fx,
                &format!("fk_store={store}&status=outOfStock&updatedDate=>={today}"),
            )
            .await,
        ),
        (today.succ_opt().unwrap(), 0),
    ] {
        client
            .execute(
                "document.querySelector('form.offer-filters input[name=since]').value = arguments[0]",
                vec![serde_json::json!(day.to_string())],
            )
            .await
            .unwrap();
        by_text(client, "button", "Apply")
            .await
            .click()
            .await
            .unwrap();
        let url = wait_for_export(client, &format!("updatedDate=%3E%3D{day}")).await;
        assert!(url.contains("status=outOfStock"), "{url}");
        if expected == 0 {
            wait_for_text(client, "No offers match.").await;
        } else {
            wait_for_offers(client, expected).await;
        }
    }

    // The picture: every offer of the host's stores.
    go(client, &fx.base, "#/offers").await;
    wait_for_offers(client, all).await;
    full_screenshot(client, save, "offers").await;

    // In German: the section, the shortcuts, the columns and the status words.
    find(client, "select#language")
        .await
        .select_by_value("de")
        .await
        .unwrap();
    // The menu changes first; the view's shortcuts when it is drawn again.
    wait_for_text(client, "Alle Angebote").await;
    settled(client).await;
    let text = body_text(client).await;
    for words in [
        "Alle Angebote",
        "Nicht vorrätig",
        "Ihre Artikelnummer",
        "Verfügbar",
        "Feed exportieren (CSV)",
        "Alle Shops",
        "Geändert seit",
        "Zuletzt geändert",
    ] {
        assert!(text.contains(words), "{words} in:\n{text}");
    }
    for english in [
        "Out of stock",
        "Your SKU",
        "Available",
        "All stores",
        "Last changed",
    ] {
        assert!(!text.contains(english), "{english} left in German:\n{text}");
    }
    go(client, &fx.base, "#/offers?status=outOfStock").await;
    wait_for_text(client, &format!("{out} Angebote")).await;
    screenshot(client, save, "offers-de").await;
    browser.client.clone().close().await.unwrap();
}

on_both_backends! { "portal";

async fn each_demo_user_works_in_the_browser(fx) {
    as_each_user(fx).await;
}

async fn a_host_reads_its_offers_in_a_table(fx) {
    host_reads_its_offers(fx).await;
}

async fn a_host_filters_its_offers_sets_a_sku_in_place_and_exports_the_feed(fx) {
    host_works_its_offers(fx).await;
}


async fn the_portal_is_served_with_its_policy_and_cache_headers(fx) {
    let index = fx.client().get(format!("{}/", fx.base)).send().await.unwrap();
    assert_eq!(index.status(), 200);
    let headers = index.headers().clone();
    assert!(headers["content-security-policy"].to_str().unwrap().starts_with("default-src 'self'"));
    assert_eq!(headers["cache-control"], "no-cache");
    let etag = headers["etag"].to_str().unwrap().to_string();
    let html = index.text().await.unwrap();
    let start = html.find("/assets/").unwrap();
    let script = &html[start..start + html[start..].find('"').unwrap()];
    let again = fx.client().get(format!("{}/", fx.base)).header("if-none-match", &etag).send().await.unwrap();
    assert_eq!(again.status(), 304);
    let asset = fx.client().get(format!("{}{script}", fx.base)).send().await.unwrap();
    assert_eq!(asset.status(), 200, "{script}");
    assert_eq!(asset.headers()["cache-control"], "public, max-age=31536000, immutable");
    let stale = script.replace(&etag.trim_matches('"').to_string(), "0000000000000000");
    assert_eq!(fx.client().get(format!("{}{stale}", fx.base)).send().await.unwrap().status(), 404);
}

}

/// Orders worked in the browser, on a fixture of their own: they move stock (demand and
/// counts), which the tests above read and compare.
mod orders_worked {
    use super::*;

    on_both_backends! { "portal-orders";

    async fn a_warehouse_ships_one_order_in_full_and_one_in_part(fx) {
        warehouse_ships_in_full_and_in_part(fx).await;
    }

    async fn a_company_accepts_an_order_rejecting_a_line_and_cancels_another(fx) {
        company_accepts_rejecting_a_line_and_cancels(fx).await;
    }

    async fn a_warehouse_ships_three_selected_orders_in_one_go(fx) {
        warehouse_ships_three_selected_orders(fx).await;
    }

    async fn a_warehouse_finds_its_late_orders(fx) {
        warehouse_finds_late_orders(fx).await;
    }

    async fn at_390_px_a_warehouse_ships_an_order_and_no_page_scrolls_sideways(fx) {
        warehouse_ships_on_a_phone(fx).await;
    }

    }
}

/// Texts of the elements `css` finds.
async fn texts_of(client: &Client, css: &str) -> Vec<String> {
    let mut out = Vec::new();
    for element in client.find_all(Locator::Css(css)).await.unwrap() {
        out.push(element.text().await.unwrap().trim().to_string());
    }
    out
}

/// Every name a resource's description gives: its properties (objects' too) and relations.
fn raw_names(schema: &serde_json::Value, names: &mut std::collections::BTreeSet<String>) {
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        names.insert(name.clone());
        raw_names(property, names);
    }
}

/// The 32-character ids in a text.
fn ids_in(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() == 32 && w.chars().all(|c| c.is_ascii_hexdigit()))
        .map(str::to_string)
        .collect()
}

/// The ids among these that name a record of some resource (each has a display label).
async fn ids_of_records(fx: &common::Fixture, resources: &[String], ids: &[String]) -> Vec<String> {
    let mut named = Vec::new();
    if ids.is_empty() {
        return named;
    }
    for resource in resources {
        let q: Vec<String> = ids.iter().map(|id| format!("id={id}")).collect();
        let found = fx
            .get(&format!("/api/{resource}?fields=id&{}", q.join("&")))
            .await
            .records(resource);
        named.extend(found.iter().map(|r| format!("{resource} {}", r["id"])));
    }
    named
}

/// Every resource's table and one record's page as the admin: headings are words (no raw
/// field name), related records are named by their labels (no 32-character id of a record, no
/// `[object Object]`), and the stock table says what each row is.
async fn every_table_reads_as_words(fx: &common::Fixture) {
    let Some((chromium, driver)) = browser() else {
        return;
    };
    let save = fx.db == common::Db::Sqlite;
    let driver = start_driver(&driver).await;
    let downloads = tempfile::tempdir().unwrap();
    let client = open_browser(&driver, &chromium, downloads.path()).await;
    let admin = fx.credential("admin");
    sign_in(
        &client,
        &fx.base,
        &admin.email,
        &demo_password(admin.user_type),
    )
    .await;
    let doc = fx.get("/api/openapi.json").await.json();
    let schemas = &doc["components"]["schemas"];
    let resources: Vec<String> = doc["paths"]
        .as_object()
        .unwrap()
        .keys()
        .filter_map(|p| p.strip_prefix("/api/"))
        .filter(|r| !r.contains('/') && r.chars().all(|c| c.is_ascii_alphanumeric()))
        .filter(|r| doc["paths"][format!("/api/{r}")]["get"].is_object())
        .map(str::to_string)
        .collect();
    assert!(resources.len() >= 15, "{resources:?}");
    let mut raw = std::collections::BTreeSet::new();
    for resource in &resources {
        let mut name = resource.clone();
        name[..1].make_ascii_uppercase();
        raw_names(&schemas[name], &mut raw);
    }
    // `Name`, `Code`, `Status` and the like are words as well as names: only a heading
    // spelled exactly as a field is raw.
    let is_raw = |heading: &str| raw.contains(heading.trim_end_matches([' ', '▲', '▼']));
    let mut opened = 0;
    for resource in &resources {
        go(&client, &fx.base, &format!("#/browse/{resource}")).await;
        find(&client, "table").await;
        settled(&client).await;
        let headings = texts_of(&client, "main h1, thead th").await;
        for heading in &headings {
            assert!(
                !is_raw(heading),
                "{resource}: the heading {heading:?} is a field name: {headings:?}"
            );
        }
        let page = body_text(&client).await;
        assert!(!page.contains("[object Object]"), "{resource}:\n{page}");
        let named = ids_of_records(fx, &resources, &ids_in(&page)).await;
        assert!(
            named.is_empty(),
            "{resource}: the table shows ids of {named:?}:\n{page}"
        );
        if resource == "stock" {
            let columns = texts_of(&client, "thead th").await;
            for title in ["Product", "Size", "Barcode", "Warehouse"] {
                assert!(
                    columns.iter().any(|c| c.starts_with(title)),
                    "the stock table shows {title}: {columns:?}"
                );
            }
            let cells = texts_of(&client, "tbody tr:first-child td").await;
            assert!(
                cells.iter().filter(|c| !c.is_empty()).count() >= 6,
                "{cells:?}"
            );
            screenshot(&client, save, "table-stock").await;
        }
        if resource == "orderItem" {
            screenshot(&client, save, "table-order-lines").await;
        }
        let links = client
            .find_all(Locator::Css("tbody tr td a.row-link"))
            .await
            .unwrap();
        let Some(first) = links.first() else {
            continue;
        };
        first.click().await.unwrap();
        find(&client, "dl.record").await;
        settled(&client).await;
        opened += 1;
        let headings = texts_of(&client, "main h1, dl.record dt").await;
        for heading in &headings {
            assert!(
                !is_raw(heading),
                "{resource} record: the heading {heading:?} is a field name: {headings:?}"
            );
        }
        let page = body_text(&client).await;
        assert!(
            !page.contains("[object Object]"),
            "{resource} record:\n{page}"
        );
        assert!(
            !page
                .lines()
                .any(|line| matches!(line.trim(), "null" | "undefined")),
            "{resource} record shows a missing part as a word:\n{page}"
        );
        let named = ids_of_records(fx, &resources, &ids_in(&page)).await;
        assert!(
            named.is_empty(),
            "{resource} record shows ids of {named:?}:\n{page}"
        );
        if matches!(resource.as_str(), "stock" | "order" | "variant" | "price") {
            full_screenshot(&client, save, &format!("record-{resource}")).await;
        }
    }
    assert!(opened >= 12, "records opened: {opened}");
    client.close().await.unwrap();
}

/// A count the API answers for a demo user.
async fn count_as(fx: &common::Fixture, user_type: &str, query: &str) -> i64 {
    common::orders::get(fx, user_type, query).await.json()["count"]
        .as_i64()
        .unwrap_or_else(|| panic!("a count for {query}"))
}

/// The number a dashboard tile shows (its digits), or None when there is no such tile.
async fn tile_value(client: &Client, name: &str) -> Option<i64> {
    let tiles = client
        .find_all(Locator::Css(&format!("[data-tile='{name}'] .tile-value")))
        .await
        .unwrap();
    let text = tiles.first()?.text().await.unwrap();
    Some(
        text.chars()
            .filter(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap_or(-1),
    )
}

/// Each demo user type's dashboard: what it has to do, as the API counts it, and the chart of
/// orders per day over 30 days, its bars summing to the orders of those days.
async fn dashboards_by_user_type(fx: &common::Fixture) {
    let Some((chromium, driver)) = browser() else {
        return;
    };
    let save = fx.db == common::Db::Sqlite;
    let driver = start_driver(&driver).await;
    let downloads = tempfile::tempdir().unwrap();
    let client = open_browser(&driver, &chromium, downloads.path()).await;
    // Orders of the last 30 days (the demo's are older), pushed by the demo host.
    let place = common::orders::place(fx, 0).await;
    for days in [0, 1, 1, 3, 10, 25] {
        push_order(
            fx,
            &place,
            &common::orders::unique("DASH"),
            Some(days_ago(days)),
        )
        .await;
    }
    let today = chrono::Utc::now().date_naive();
    let first = today - chrono::Duration::days(29);
    for user_type in ["warehouse", "company", "host", "admin"] {
        let credential = fx.credential(user_type);
        sign_in(
            &client,
            &fx.base,
            &credential.email,
            &demo_password(credential.user_type),
        )
        .await;
        go(&client, &fx.base, "#/dashboard").await;
        find(&client, "svg.chart-svg").await;
        settled(&client).await;
        let bars = client
            .find_all(Locator::Css("svg.chart-svg rect.bar"))
            .await
            .unwrap();
        assert_eq!(bars.len(), 30, "{user_type}: a bar a day");
        let mut drawn = 0;
        for bar in &bars {
            drawn += bar
                .attr("data-count")
                .await
                .unwrap()
                .unwrap()
                .parse::<i64>()
                .unwrap();
        }
        let expected = count_as(
            fx,
            user_type,
            &format!("/api/order/count?orderDate=%3E%3D{first}"),
        )
        .await;
        assert_eq!(
            drawn, expected,
            "{user_type}: the chart's orders of 30 days"
        );
        if user_type == "admin" {
            assert!(drawn >= 6, "the orders just pushed are drawn: {drawn}");
        }
        let files = tile_value(&client, "failed").await;
        match user_type {
            "warehouse" => {
                let ship = count_as(
                    fx,
                    user_type,
                    "/api/order/count?status=accepted&status=partDispatched",
                )
                .await;
                assert_eq!(tile_value(&client, "toShip").await, Some(ship));
                assert!(tile_value(&client, "late").await.is_some());
                assert!(tile_value(&client, "stockOuts").await.is_none());
                screenshot(&client, save, "dashboard-warehouse").await;
            }
            "company" => {
                let outs = count_as(fx, user_type, "/api/stock/count?available=0").await;
                assert_eq!(tile_value(&client, "stockOuts").await, Some(outs));
                let failed = count_as(fx, user_type, "/api/file/count?status=failed").await;
                assert_eq!(files, Some(failed));
                screenshot(&client, save, "dashboard-company").await;
            }
            "host" => {
                assert_eq!(files, None, "a host's dashboard has no file tiles");
                let open = count_as(
                    fx,
                    user_type,
                    "/api/order/count?status=new&status=accepted&status=partDispatched",
                )
                .await;
                assert_eq!(tile_value(&client, "open").await, Some(open));
                screenshot(&client, save, "dashboard-host").await;
            }
            _ => {
                full_screenshot(&client, save, "dashboard-admin").await;
                client.set_window_size(390, 844).await.unwrap();
                // Drawn again at the phone's width (the same address would not be).
                go(&client, &fx.base, "#/orders").await;
                go(&client, &fx.base, "#/dashboard").await;
                find(&client, "svg.chart-svg").await;
                settled(&client).await;
                assert_fits(&client, "the dashboard at 390 px").await;
                full_screenshot(&client, save, "phone-dashboard-admin").await;
                client.set_window_size(1280, 900).await.unwrap();
            }
        }
        sign_out(&client).await;
    }
    client.close().await.unwrap();
}

/// Tables and dashboards read as words, on a fixture of their own (only the dashboards' test
/// writes: orders of the last 30 days, which the tables' test does not compare).
mod tables_read {
    use super::*;

    on_both_backends! { "portal-tables";

    async fn every_resources_table_and_record_page_reads_as_words_as_admin(fx) {
        every_table_reads_as_words(fx).await;
    }

    async fn each_user_types_dashboard_shows_its_work_and_a_chart_of_30_days(fx) {
        dashboards_by_user_type(fx).await;
    }

    }
}

/// Setting up customers and the smaller things, on a fixture of their own (they add
/// companies, brands and users, which the browse test counts).
mod set_up {
    use super::*;

    on_both_backends! { "portal-setup";

    async fn an_admin_sets_up_a_customer_whose_user_signs_in_and_sees_only_its_company(fx) {
        admin_sets_up_a_customer(fx).await;
    }

    async fn sign_in_skip_link_dashboards_uploads_and_phones_hold(fx) {
        small_things_hold(fx).await;
    }

    async fn a_user_switches_the_portal_to_german_and_back(fx) {
        switches_language(fx).await;
    }

    }
}

/// The language switch: a company user of its own (English) chooses Deutsch in the header;
/// the pages speak German, the choice is in the user's record (read back through the API)
/// and outlives a reload; English again the same way.
async fn switches_language(fx: &common::Fixture) {
    let companies = fx
        .get("/api/company?pageSize=1&fields=id")
        .await
        .records("company");
    let company = common::orders::text(&companies[0]["id"]);
    let name = format!("Lena {}", common::unique_number());
    let credentials = english_user(fx, "company", &name, ("fk_company", &company)).await;
    let Some(browser) = browser_as(fx, &credentials, 1280, 800).await else {
        return;
    };
    let client = &browser.client;
    let user = fx
        .get(&format!(
            "/api/user?name={}&fields=id",
            name.replace(' ', "%20")
        ))
        .await
        .records("user");
    let id = common::orders::text(&user[0]["id"]);
    let lang_of = |answer: Vec<serde_json::Value>| answer[0]["detail"]["lang"].clone();
    assert_eq!(nav_sections(client).await[0], "Dashboard");

    find(client, "select#language")
        .await
        .select_by_value("de")
        .await
        .unwrap();
    wait_for_text(client, "Übersicht").await;
    assert_eq!(nav_sections(client).await[0], "Übersicht");
    let stored = fx
        .get(&format!("/api/user/{id}?fields=detail.lang"))
        .await
        .records("user");
    assert_eq!(lang_of(stored), "de");
    client.refresh().await.unwrap();
    wait_for_text(client, "Übersicht").await;
    assert_eq!(page_language(client).await, "de");
    screenshot(client, fx.db == common::Db::Sqlite, "language-switch").await;

    find(client, "select#language")
        .await
        .select_by_value("en")
        .await
        .unwrap();
    wait_for_text(client, "Dashboard").await;
    let stored = fx
        .get(&format!("/api/user/{id}?fields=detail.lang"))
        .await
        .records("user");
    assert_eq!(lang_of(stored), "en");
}

/// Pairs of (English, German) texts of the API's description: fields' titles
/// (`x-brandhub-titles`), codes' words (`x-brandhub-words`) and what records are called
/// (`x-brandhub-names`), which the portal shows in the page's language.
fn described_pairs(node: &serde_json::Value, pairs: &mut Vec<(String, String)>) {
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    match node {
        serde_json::Value::Object(map) => {
            for (name, value) in map {
                match name.as_str() {
                    "x-brandhub-titles" => pairs.push((text(&value["en"]), text(&value["de"]))),
                    "x-brandhub-words" => {
                        for word in value.as_object().into_iter().flat_map(|m| m.values()) {
                            pairs.push((text(&word["en"]), text(&word["de"])));
                        }
                    }
                    "x-brandhub-names" => {
                        for n in ["one", "many"] {
                            pairs.push((text(&value["en"][n]), text(&value["de"][n])));
                        }
                    }
                    _ => described_pairs(value, pairs),
                }
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                described_pairs(item, pairs);
            }
        }
        _ => {}
    }
}

/// The English texts of the portal whose German differs: from the language files (every
/// key whose German text is another) and the API's description (titles, codes' words and
/// records' names), each cut at its `{placeholders}` into the pieces a page can show, less
/// pieces that are German words too (a word spelled the same in both languages, "Status",
/// is no sign of English) and the language switch's own names.
fn english_only(description: &serde_json::Value) -> Vec<String> {
    const EN: &str = include_str!("../../server/portal/lang/en.js");
    const DE: &str = include_str!("../../server/portal/lang/de.js");
    let german = texts(DE);
    let mut pairs: Vec<(String, String)> = texts(EN)
        .into_iter()
        .filter(|(key, _)| !["locale", "languageName"].contains(key))
        .filter_map(|(key, text)| {
            let (_, de) = german.iter().find(|(k, _)| *k == key)?;
            Some((text, de.clone()))
        })
        .collect();
    described_pairs(description, &mut pairs);
    let pieces = |text: &str| -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = text;
        loop {
            let (piece, after) = match rest.split_once('{') {
                Some((piece, after)) => (piece, after.split_once('}').map_or("", |(_, a)| a)),
                None => (rest, ""),
            };
            let piece = piece.trim_matches(|c: char| !c.is_alphanumeric());
            if piece.chars().filter(|c| c.is_alphabetic()).count() >= 3 {
                out.push(piece.to_string());
            }
            if after.is_empty() {
                return out;
            }
            rest = after;
        }
    };
    let german_pieces: std::collections::BTreeSet<String> =
        pairs.iter().flat_map(|(_, de)| pieces(de)).collect();
    let german_words: std::collections::BTreeSet<&str> = pairs
        .iter()
        .flat_map(|(_, de)| de.split(|c: char| !c.is_alphanumeric()))
        .collect();
    let mut english = std::collections::BTreeSet::new();
    for (en, de) in &pairs {
        if en == de || de.is_empty() {
            continue;
        }
        for piece in pieces(en) {
            let one_word = !piece.contains(|c: char| !c.is_alphanumeric());
            let german_too =
                german_pieces.contains(&piece) || (one_word && german_words.contains(&*piece));
            if !german_too {
                english.insert(piece);
            }
        }
    }
    english.into_iter().collect()
}

/// Where `needle` stands in `text` as words of their own (no letter or digit on either side).
fn as_words(text: &str, needle: &str) -> bool {
    text.match_indices(needle).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + needle.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// What the page says: its text, and the labels, hints and titles its controls carry.
async fn everything_said(client: &Client) -> String {
    client
        .execute(
            "const said = [document.body.innerText];
             for (const e of document.querySelectorAll('[aria-label], [placeholder], [title], [alt]')) {
               for (const name of ['aria-label', 'placeholder', 'title', 'alt']) {
                 if (e.hasAttribute(name)) said.push(e.getAttribute(name));
               }
             }
             return said.join('\\n');",
            vec![],
        )
        .await
        .unwrap()
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Fails when the page shows any of `english` (see [`english_only`]) outside of `data` (what
/// records say, in whatever language they were written).
async fn assert_no_english(client: &Client, english: &[String], data: &[&str], page: &str) {
    let mut said = everything_said(client).await;
    for value in data {
        said = said.replace(value, "");
    }
    let found: Vec<&String> = english.iter().filter(|e| as_words(&said, e)).collect();
    assert!(
        found.is_empty(),
        "{page} shows English {found:?} in:\n{said}"
    );
}

/// A German warehouse user (`detail.lang` `de`) reads an order's page, has a write refused
/// by the server (the order was cancelled meanwhile), and reads the files page: none shows
/// an English text of the portal whose German differs.
async fn german_pages_read_german(fx: &common::Fixture) {
    let description: serde_json::Value = fx
        .client()
        .get(format!("{}/api/openapi.json", fx.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let english = english_only(&description);
    for word in ["Dashboard", "Dispatched", "Order lines"] {
        assert!(
            english.iter().any(|e| e == word),
            "{word} is not among the English texts: {english:?}"
        );
    }
    let place = common::orders::place(fx, 0).await;
    let order = push_order(fx, &place, &common::orders::unique("DE-PAGE"), None).await;
    let id = common::orders::text(&order["id"]);
    accept(fx, &id).await;
    let user = user_reading(
        fx,
        "warehouse",
        "Jonas Packer",
        ("fk_warehouse", &place.warehouse),
        "de",
    )
    .await;
    let Some(b) = browser_as(fx, &user, 1280, 900).await else {
        return;
    };
    let client = &b.client;
    assert_eq!(page_language(client).await, "de");
    let data = [user.0.as_str()];

    // The order's page, with its form to ship.
    let reference = common::orders::text(&order["brandOrderRef"]);
    go(client, &fx.base, &format!("#/orders/o/{id}")).await;
    wait_for_text(client, &reference).await;
    for (_, barcode) in &place.variants {
        wait_for_text(client, barcode).await;
    }
    labelled(client, "Carrier").await;
    assert_no_english(client, &english, &data, "the order's page").await;

    // A write the server refuses: the company cancels the order meanwhile, then the warehouse
    // ships it from the page it still has open.
    let cancelled = common::orders::patch(
        fx,
        "company",
        &id,
        serde_json::json!({"status": "cancelled"}),
    )
    .await;
    common::orders::ok(&cancelled, 200);
    type_into(labelled(client, "Carrier").await, "DHL").await;
    type_into(labelled(client, "Tracking number").await, "JD014600006282").await;
    by_text(client, "button", "Ship")
        .await
        .click()
        .await
        .unwrap();
    let problem = find(client, ".problem[role=alert] strong").await;
    let title = problem.text().await.unwrap();
    assert_ne!(title, "", "the refusal's title");
    // The server's own words are German too (it answers in the page's language).
    let detail = find(client, ".problem[role=alert] p[lang=de]")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        detail.contains("Bestellung") && detail.contains("kann nicht"),
        "the refusal's detail is German: {detail}"
    );
    assert_no_english(client, &english, &data, "a refused write").await;
    full_screenshot(client, fx.db == common::Db::Sqlite, "order-refused-de").await;

    // The files page: the upload form, the templates, the recent files.
    go(client, &fx.base, "#/files").await;
    labelled(client, "File type").await;
    assert_no_english(client, &english, &data, "the files page").await;
    screenshot(client, fx.db == common::Db::Sqlite, "files-de").await;
    b.client.clone().close().await.unwrap();
}

/// The portal in German, on a fixture of its own (it pushes and cancels an order).
mod german {
    use super::*;

    on_both_backends! { "portal-german";

    async fn a_german_user_reads_no_english_on_an_order_a_refusal_and_the_files_page(fx) {
        german_pages_read_german(fx).await;
    }

    }
}

/// A navigation of the signed-in page to `hash`, timed in the page: from setting the address
/// to the frame after the User Timing mark `drawn` (the page whole in the document) was
/// painted, and the time the API calls it made took (the union of their spans, from each
/// request's start to its answer's end: calls made together count once).
async fn timed_navigation(client: &Client, hash: &str, drawn: &str) -> Timed {
    let timed = client
        .execute_async(
            "const [hash, drawn, done] = arguments;
             performance.clearResourceTimings();
             performance.clearMarks(drawn);
             const start = performance.now();
             // The frame that shows it, painted: the first animation frame that finds the mark,
             // and the task after that frame. Looked for at every frame, not by a
             // PerformanceObserver: the observer's callback is a task of its own, which can
             // run after that frame was painted and would then wait for the frame after it.
             const frame = () => {
               if (!performance.getEntriesByName(drawn).length) return requestAnimationFrame(frame);
               const found = performance.now();
               setTimeout(() => {
                 const end = performance.now();
                 const calls = performance.getEntriesByType('resource')
                   .filter((r) => r.name.includes('/api/') && r.startTime >= start)
                   .map((r) => [r.startTime, r.responseEnd])
                   .sort((a, b) => a[0] - b[0]);
                 let api = 0, reach = start;
                 for (const [from, to] of calls) {
                   if (to > reach) { api += to - Math.max(from, reach); reach = to; }
                 }
                 const mark = performance.getEntriesByName(drawn).at(-1).startTime;
                 done({ drawn: end - start, api, calls: calls.length,
                        before: calls.length ? calls[0][0] - start : 0,
                        after: mark - Math.max(start, ...calls.map((c) => c[1])),
                        wait: found - mark, paint: end - found });
               });
             };
             requestAnimationFrame(frame);
             location.hash = hash;",
            vec![serde_json::json!(hash), serde_json::json!(drawn)],
        )
        .await
        .unwrap_or_else(|e| panic!("{hash} was never drawn: {e}"));
    assert!(
        timed["calls"].as_u64().unwrap_or(0) > 0,
        "{hash}: no API call timed: {timed}"
    );
    let figure = |name: &str| timed[name].as_f64().unwrap_or(f64::NAN);
    Timed {
        drawn: figure("drawn"),
        api: figure("api"),
        before: figure("before"),
        after: figure("after"),
        wait: figure("wait"),
        paint: figure("paint"),
    }
}

/// A navigation's time ([`timed_navigation`]), in milliseconds, and where it went: before the
/// first API call, from the last answer to the mark of the page made, from the mark to the
/// animation frame that found it (the wait for the next frame), and from that frame's start to
/// the task after it was painted.
struct Timed {
    drawn: f64,
    api: f64,
    before: f64,
    after: f64,
    wait: f64,
    paint: f64,
}

/// The median of a few figures.
fn median(mut figures: Vec<f64>) -> f64 {
    figures.sort_by(f64::total_cmp);
    figures[figures.len() / 2]
}

/// The portal's timings for bench/portal.sh (README, "The portal" goals; a benchmark, so ignored by
/// `cargo test`): the first load's bytes (uncompressed, every asset) and time on loopback, a
/// browse table of 100 stock rows from the API's answer to the table in the page, an order's
/// page and the table of 100 rows from navigation to drawn against the time of the API calls
/// each makes (five of each after one to warm up; medians), and a 10,000-row product file
/// from choosing it to `processed` in the page. Prints one `PORTAL` line of figures.
#[tokio::test]
#[ignore = "a benchmark: bash bench/portal.sh"]
async fn portal_timings() {
    let fx = common::shared(common::Db::Sqlite, "portal-bench").expect("SQLite always runs");
    let Some((chromium, driver)) = browser() else {
        panic!("the portal benchmark needs chromium and chromedriver");
    };
    let driver = start_driver(&driver).await;
    let downloads = tempfile::tempdir().unwrap();
    let client = open_browser(&driver, &chromium, downloads.path()).await;
    // The first load, in a browser that has never seen the portal.
    client.goto(&format!("{}/", fx.base)).await.unwrap();
    labelled(&client, "Email").await;
    let first = client
        .execute(
            "const nav = performance.getEntriesByType('navigation')[0];
             const assets = performance.getEntriesByType('resource').filter((r) => !r.name.includes('/api/'));
             return { bytes: nav.decodedBodySize + assets.reduce((n, r) => n + r.decodedBodySize, 0),
                      files: assets.length + 1, ms: nav.loadEventEnd };",
            vec![],
        )
        .await
        .unwrap();
    let credential = fx.credential("admin");
    sign_in(
        &client,
        &fx.base,
        &credential.email,
        &demo_password(credential.user_type),
    )
    .await;
    // Browse: 100 stock rows, five times; from the API's answer to the table built.
    let mut browse = Vec::new();
    for n in 0..5 {
        go(
            &client,
            &fx.base,
            &format!("#/browse/stock?pageSize=100&page={}", n + 1),
        )
        .await;
        client
            .wait()
            .at_most(Duration::from_secs(30))
            .for_element(Locator::Css("table tbody tr:nth-child(100)"))
            .await
            .expect("100 rows");
        let ms = client
            .execute(
                "const a = performance.getEntriesByName('browse:answered').at(-1);
                 const r = performance.getEntriesByName('browse:rendered').at(-1);
                 return r.startTime - a.startTime;",
                vec![],
            )
            .await
            .unwrap();
        browse.push(ms.as_f64().unwrap_or(f64::NAN));
    }
    browse.sort_by(f64::total_cmp);
    // From navigation to drawn, against the API calls made: an order's page (another order
    // each time) and the table of 100 stock rows (another page each time); one of each first
    // to warm up (the view's code, the API's description).
    let orders = fx
        .get("/api/order?pageSize=6&fields=id&order_by=id")
        .await
        .records("order");
    assert_eq!(orders.len(), 6, "the demo data has orders");
    let mut order_pages = Vec::new();
    for order in &orders {
        let hash = format!("#/orders/o/{}", common::orders::text(&order["id"]));
        order_pages.push(timed_navigation(&client, &hash, "order:drawn").await);
    }
    let mut tables = Vec::new();
    for n in 0..6 {
        let hash = format!("#/browse/stock?pageSize=100&page={}", n + 10);
        tables.push(timed_navigation(&client, &hash, "browse:rendered").await);
    }
    let figures = |timed: &[Timed]| {
        let timed = &timed[1..];
        let of = |figure: fn(&Timed) -> f64| median(timed.iter().map(figure).collect());
        (
            of(|t| t.drawn),
            of(|t| t.api),
            of(|t| t.drawn / t.api),
            format!(
                "before={:.1} after={:.1} wait={:.1} paint={:.1}",
                of(|t| t.before),
                of(|t| t.after),
                of(|t| t.wait),
                of(|t| t.paint)
            ),
        )
    };
    let (order_drawn, order_api, order_ratio, order_parts) = figures(&order_pages);
    let (table_drawn, table_api, table_ratio, table_parts) = figures(&tables);
    println!("PARTS order {order_parts}; table {table_parts}");
    // A 10,000-row product file, from choosing it to processed.
    let code = format!("PB{}", std::process::id());
    let mut rows = vec![common::row(&["Product Code", "Title", "Barcode", "Size"])];
    for n in 0..10_000u64 {
        rows.push(vec![
            format!("{code}-{}", n / 4),
            format!("Benchmark product {}", n / 4),
            format!("28{:011}", u64::from(std::process::id()) * 100_000 + n),
            format!("S{}", n % 4),
        ]);
    }
    let bytes = common::xlsx(&rows);
    let path = downloads.path().join("portal-bench-10000.xlsx");
    std::fs::write(&path, &bytes).unwrap();
    go(&client, &fx.base, "#/files").await;
    let started = std::time::Instant::now();
    upload_in_page(&client, &path).await;
    client
        .wait()
        .at_most(Duration::from_secs(300))
        .for_element(Locator::Css(".upload-status[data-status=processed]"))
        .await
        .expect("the file is processed");
    let upload_ms = started.elapsed().as_secs_f64() * 1000.0;
    client.close().await.unwrap();
    println!(
        "PORTAL first_load_bytes={} first_load_files={} first_load_ms={:.0} browse100_median_ms={:.1} browse100_max_ms={:.1} order_drawn_ms={order_drawn:.1} order_api_ms={order_api:.1} order_ratio={order_ratio:.2} table100_drawn_ms={table_drawn:.1} table100_api_ms={table_api:.1} table100_ratio={table_ratio:.2} upload10000_ms={:.0} file_bytes={}",
        first["bytes"],
        first["files"],
        first["ms"].as_f64().unwrap_or(f64::NAN),
        browse[2],
        browse[4],
        upload_ms,
        bytes.len()
    );
}
