//! A scripted model API on 127.0.0.1 for the proxy tests: each request is
//! recorded and answered with the next canned response, whose body may be
//! sent in several chunks (to split streams where a test wants).
#![allow(dead_code)]

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Frame;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// One canned answer.
#[derive(Clone)]
pub struct Canned {
    pub status: u16,
    pub content_type: &'static str,
    pub chunks: Vec<Vec<u8>>,
}

impl Canned {
    pub fn json(v: &Value) -> Canned {
        Canned {
            status: 200,
            content_type: "application/json",
            chunks: vec![v.to_string().into_bytes()],
        }
    }

    /// An SSE body, cut into chunks of `chunk` bytes.
    pub fn sse(text: &str, chunk: usize) -> Canned {
        Canned {
            status: 200,
            content_type: "text/event-stream",
            chunks: text
                .as_bytes()
                .chunks(chunk.max(1))
                .map(<[u8]>::to_vec)
                .collect(),
        }
    }
}

/// What the upstream received.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path_and_query: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the upstream got JSON")
    }
}

pub struct FakeUpstream {
    pub addr: SocketAddr,
    pub received: Arc<Mutex<Vec<Received>>>,
    script: Arc<Mutex<VecDeque<Canned>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeUpstream {
    pub fn start(script: Vec<Canned>) -> FakeUpstream {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let addr = std_listener.local_addr().expect("addr");
        let received = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(VecDeque::from(script)));
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let (r, s) = (received.clone(), script.clone());
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(std_listener).expect("listener");
                loop {
                    let (stream, _) = tokio::select! {
                        a = listener.accept() => match a { Ok(a) => a, Err(_) => break },
                        _ = &mut stopped => break,
                    };
                    let (r, s) = (r.clone(), s.clone());
                    tokio::spawn(async move {
                        let svc = service_fn(move |req: Request<hyper::body::Incoming>| {
                            let (r, s) = (r.clone(), s.clone());
                            async move {
                                let (parts, body) = req.into_parts();
                                let body = body
                                    .collect()
                                    .await
                                    .map(|b| b.to_bytes().to_vec())
                                    .unwrap_or_default();
                                r.lock().unwrap().push(Received {
                                    method: parts.method.to_string(),
                                    path_and_query: parts
                                        .uri
                                        .path_and_query()
                                        .map(|p| p.to_string())
                                        .unwrap_or_default(),
                                    headers: parts
                                        .headers
                                        .iter()
                                        .map(|(k, v)| {
                                            (
                                                k.to_string(),
                                                v.to_str().unwrap_or_default().to_string(),
                                            )
                                        })
                                        .collect(),
                                    body,
                                });
                                let canned = s.lock().unwrap().pop_front().unwrap_or(Canned {
                                    status: 500,
                                    content_type: "application/json",
                                    chunks: vec![b"{\"error\":\"script exhausted\"}".to_vec()],
                                });
                                let body =
                                    Chunks(canned.chunks.into_iter().map(Bytes::from).collect())
                                        .boxed();
                                let mut resp = Response::new(body);
                                *resp.status_mut() =
                                    hyper::StatusCode::from_u16(canned.status).unwrap();
                                resp.headers_mut()
                                    .insert("content-type", canned.content_type.parse().unwrap());
                                Ok::<_, Infallible>(resp)
                            }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), svc)
                            .await;
                    });
                }
            });
        });
        FakeUpstream {
            addr,
            received,
            script,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

impl Drop for FakeUpstream {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A body that yields its chunks one frame each (so each is its own write).
struct Chunks(VecDeque<Bytes>);

impl hyper::body::Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        std::task::Poll::Ready(self.0.pop_front().map(|b| Ok(Frame::data(b))))
    }
}
