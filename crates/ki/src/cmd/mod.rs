pub mod admin;
pub mod catalog;
pub mod catalog_store;
pub mod manifest;
pub mod ranking;
pub mod run;
pub mod serve;
pub mod source;
