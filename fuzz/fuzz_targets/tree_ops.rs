#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| zkr_fuzz::model::run(&zkr_fuzz::model::ops_from_bytes(data)));
