//! Entry point of the web worker.

fn main() {
    #[cfg(target_arch = "wasm32")]
    {
        use yew_agent::Registrable;
        aiperf_web::worker::TraceWorker::registrar().encoding::<aiperf_web::codec::WithFiles>().register();
    }
}
