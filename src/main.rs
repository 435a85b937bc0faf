fn main() {
    cairn::phase("main");
    let code = cairn::run(std::env::args_os());
    cairn::phase("exit");
    std::process::exit(code);
}
