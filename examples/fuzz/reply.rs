//! A local HTTP/1.1 server for the provider targets: it answers every POST with 200 and the
//! body set last, so that the real HTTP client reads the fuzzed reply.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Mutex, OnceLock};

static BODY: Mutex<Vec<u8>> = Mutex::new(Vec::new());

pub fn set(body: &[u8]) {
    let mut b = BODY.lock().unwrap_or_else(|p| p.into_inner());
    b.clear();
    b.extend_from_slice(body);
}

/// The server's base URL, started on first use.
pub fn server() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a local port");
        let url = format!("http://{}", listener.local_addr().expect("an address"));
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                std::thread::spawn(move || serve(conn));
            }
        });
        url
    })
    .clone()
}

fn serve(conn: std::net::TcpStream) {
    // One write a reply and no Nagle delay, or each call waits out a delayed ACK.
    let _ = conn.set_nodelay(true);
    let Ok(mut out) = conn.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(conn);
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line == "\r\n" || line == "\n" {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut request = vec![0; length];
        if reader.read_exact(&mut request).is_err() {
            return;
        }
        let body = BODY.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        reply.extend_from_slice(&body);
        if out.write_all(&reply).is_err() {
            return;
        }
    }
}
