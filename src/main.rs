fn main() {
    std::process::exit(cairn::run(std::env::args_os()));
}
