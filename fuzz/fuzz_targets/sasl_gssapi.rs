#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| zkr_fuzz::checks::sasl_gssapi(data));
