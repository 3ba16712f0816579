//! Entry point of the web worker (and of the helper it starts).

fn main() {
    #[cfg(target_arch = "wasm32")]
    aiperf_web::worker::start();
}
