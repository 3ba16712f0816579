//! Entry point of the page.

fn main() {
    #[cfg(target_arch = "wasm32")]
    yew::Renderer::<aiperf_web::components::App>::new().render();
}
