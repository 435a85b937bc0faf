//! The console's stylesheet and script, compiled into the binary: nothing is fetched from
//! anywhere else.

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

const STYLE: &str = include_str!("assets/style.css");
const SCRIPT: &str = include_str!("assets/app.js");
const ICON: &str = include_str!("assets/favicon.svg");

/// `GET /favicon.ico`: the console's icon (an SVG, which browsers take at that address too),
/// so a browser's own request for it is not a 404.
pub async fn favicon() -> Response {
    (
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (header::CACHE_CONTROL, "max-age=86400"),
        ],
        ICON,
    )
        .into_response()
}

pub async fn get(Path(name): Path<String>) -> Response {
    match name.as_str() {
        "style.css" => ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE).into_response(),
        "app.js" => (
            [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
            SCRIPT,
        )
            .into_response(),
        _ => (StatusCode::NOT_FOUND, "no such asset").into_response(),
    }
}
