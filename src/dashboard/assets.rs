//! The page's files, embedded in the binary so the dashboard works on a
//! machine with no network: nothing is fetched from a CDN, ever.
//!
//! The sources are `dashboard/src/` (hand-written), and the chart library
//! is `dashboard/vendor/`, copied from the npm package pinned in
//! `dashboard/package-lock.json` by `dashboard/build.mjs` (CI checks the
//! copy against a fresh install: `.ci/steps/50-dashboard.sh`).

use crate::http::response::{error, full, Body};
use hyper::header::{
    HeaderName, HeaderValue, CONTENT_SECURITY_POLICY, CONTENT_TYPE, REFERRER_POLICY,
    X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use hyper::{Response, StatusCode};

/// Scripts and styles from this server only, no inline code or `eval`,
/// connections back to this server only, never framed.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
                       img-src 'self' data:; connect-src 'self'; font-src 'self'; \
                       base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// One embedded file.
pub struct Asset {
    pub path: &'static str,
    pub content_type: &'static str,
    pub bytes: &'static [u8],
}

/// Every file the page loads, by the path it is served at.
pub const ASSETS: [Asset; 6] = [
    Asset {
        path: "/ui/",
        content_type: "text/html; charset=utf-8",
        bytes: include_bytes!("../../dashboard/src/index.html"),
    },
    Asset {
        path: "/ui/app.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../../dashboard/src/app.js"),
    },
    Asset {
        path: "/ui/logic.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../../dashboard/src/logic.js"),
    },
    Asset {
        path: "/ui/app.css",
        content_type: "text/css; charset=utf-8",
        bytes: include_bytes!("../../dashboard/src/app.css"),
    },
    Asset {
        path: "/ui/vendor/uPlot.iife.min.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../../dashboard/vendor/uPlot.iife.min.js"),
    },
    Asset {
        path: "/ui/vendor/uPlot.min.css",
        content_type: "text/css; charset=utf-8",
        bytes: include_bytes!("../../dashboard/vendor/uPlot.min.css"),
    },
];

/// The asset at `path` (`/ui` is the page), or a 404 naming the page.
pub fn serve(path: &str) -> Response<Body> {
    let path = if path == "/ui" || path == "/ui/index.html" {
        "/ui/"
    } else {
        path
    };
    match ASSETS.iter().find(|a| a.path == path) {
        Some(a) => {
            let mut r = Response::new(full(a.bytes));
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(a.content_type));
            r
        }
        None => error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no such dashboard file `{path}` (the dashboard is at /ui)"),
        ),
    }
}

/// The security headers every `/ui` response carries.
pub fn secure(r: &mut Response<Body>) {
    let h = r.headers_mut();
    h.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_nothing_from_elsewhere_and_has_no_inline_code() {
        let page = std::str::from_utf8(ASSETS[0].bytes).expect("utf-8");
        for a in &ASSETS[1..] {
            let name = a.path.trim_start_matches("/ui");
            if a.path.ends_with("logic.js") {
                continue; // imported by app.js, not by the page
            }
            assert!(
                page.contains(&format!("\"{}\"", a.path)),
                "{name} is linked"
            );
        }
        assert!(!page.contains("http://") && !page.contains("https://"));
        assert!(!page.contains(" style="), "no inline style");
        let handler = page.match_indices(" on").any(|(i, _)| {
            let rest = &page[i + 3..];
            let name_len = rest.bytes().take_while(u8::is_ascii_lowercase).count();
            name_len > 0 && rest[name_len..].starts_with('=')
        });
        assert!(!handler, "no inline event handler");
        // Every <script> has a src: nothing inline.
        for (i, _) in page.match_indices("<script") {
            let tag = &page[i..i + page[i..].find('>').unwrap_or(0)];
            assert!(tag.contains(" src=\"/ui/"), "inline script: {tag}");
        }
    }
}
