//! The `brandhub` binary as an operator runs it: commands on a data dir (and database URL),
//! and `serve` processes that a test starts, talks to over HTTPS, reads the log of, and kills
//! (gracefully, or with SIGKILL as a crash would).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};

/// How to run the binary: a data dir, optionally a database URL, and extra environment.
#[derive(Clone)]
pub struct Brandhub {
    pub data_dir: PathBuf,
    pub database_url: Option<String>,
    pub env: Vec<(String, String)>,
}

impl Brandhub {
    /// The binary on a data dir with its default database (SQLite inside it).
    pub fn new(data_dir: &Path) -> Brandhub {
        Brandhub {
            data_dir: data_dir.to_path_buf(),
            database_url: None,
            env: Vec::new(),
        }
    }

    /// The binary on a data dir and a database URL.
    pub fn on(data_dir: &Path, database_url: &str) -> Brandhub {
        Brandhub {
            database_url: Some(database_url.to_string()),
            ..Brandhub::new(data_dir)
        }
    }

    fn command(&self, log: &str) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_brandhub"));
        // The caller's BRANDHUB_* settings must not change what the test runs.
        for (name, _) in std::env::vars() {
            if name.starts_with("BRANDHUB_") {
                command.env_remove(name);
            }
        }
        // No NO_COLOR here: logs written to a pipe must come without colour codes by
        // themselves (tests read them).
        command.env_remove("NO_COLOR");
        command
            .arg("--data-dir")
            .arg(&self.data_dir)
            .args(["--log", log]);
        if let Some(url) = &self.database_url {
            command.args(["--database-url", url]);
        }
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }

    /// Runs a command to its end.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command("warn")
            .args(args)
            .output()
            .expect("the binary runs")
    }

    /// Runs a command that must succeed; returns its standard output.
    pub fn run_ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        let stdout = String::from_utf8_lossy(&output.stdout).to_string();
        assert!(
            output.status.success(),
            "brandhub {args:?} failed\nstdout: {stdout}\nstderr: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        stdout
    }

    /// Loads the demo data set at `scale`; returns the demo users' (user type, email, key).
    pub fn demo(&self, scale: u64) -> Vec<(String, String, String)> {
        let stdout = self.run_ok(&["demo", "--scale", &scale.to_string()]);
        stdout
            .lines()
            .skip_while(|line| !line.starts_with("demo users"))
            .filter_map(|line| {
                let words: Vec<&str> = line.split_whitespace().collect();
                match words.as_slice() {
                    [user_type, email, ":", key, ":", _password] => {
                        Some((user_type.to_string(), email.to_string(), key.to_string()))
                    }
                    _ => None,
                }
            })
            .collect()
    }

    /// Starts `brandhub serve` on a free port with these extra arguments and waits until it
    /// prints its address. Its log (at `log` level) is collected for [`Server::log`].
    pub fn serve_logging(&self, log: &str, args: &[&str]) -> Server {
        let mut child = self
            .command(log)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the server starts");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().expect("stderr is piped");
        let collected = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                collected.lock().unwrap().push(line);
            }
        });
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut stdout = BufReader::new(stdout).lines();
        let base = loop {
            let Some(Ok(line)) = stdout.next() else {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "the server stopped before printing its address:\n{}",
                    lines.lock().unwrap().join("\n")
                );
            };
            if let Some(rest) = line.strip_prefix("brandhub serves ") {
                break rest.split("/api").next().unwrap().to_string();
            }
        };
        // Keep reading stdout so the server never blocks on a full pipe.
        let printed = Arc::new(Mutex::new(Vec::new()));
        let kept = printed.clone();
        std::thread::spawn(move || {
            for line in stdout.by_ref().map_while(Result::ok) {
                kept.lock().unwrap().push(line);
            }
        });
        Server {
            child,
            base,
            log: lines,
            printed,
        }
    }

    /// Starts `brandhub serve` logging warnings only.
    pub fn serve(&self, args: &[&str]) -> Server {
        self.serve_logging("warn", args)
    }

    /// An HTTPS client that trusts the certificate `serve` generated in the data dir.
    pub fn client(&self) -> reqwest::Client {
        super::client_trusting(
            &std::fs::read_to_string(self.data_dir.join("tls/cert.pem"))
                .expect("a certificate was generated"),
        )
    }
}

/// A running `brandhub serve`; killed (SIGKILL) when dropped.
pub struct Server {
    child: Child,
    /// `https://127.0.0.1:<port>`.
    pub base: String,
    log: Arc<Mutex<Vec<String>>>,
    /// What it printed on stdout after its address.
    printed: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// The process id, to tell servers apart in a test's messages.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the process with SIGKILL, as a crash or the OOM killer would: no clean-up runs.
    pub fn kill(mut self) {
        self.child.kill().expect("the server can be killed");
        self.child.wait().expect("the server is reaped");
    }

    /// The log lines written so far.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Waits (up to a minute) until a log line satisfies `wanted`; returns the log so far.
    pub fn log_until(&self, wanted: impl Fn(&str) -> bool) -> Vec<String> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let log = self.log();
            if log.iter().any(|line| wanted(line)) {
                return log;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no such log line within a minute:
{}",
                log.join(
                    "
"
                )
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The lines it printed on stdout after its address (such as where metrics are served).
    pub fn printed(&self) -> Vec<String> {
        self.printed.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
