pub mod catalog;
pub mod catalog_store;
pub mod manifest;
pub mod admin;
pub mod serve;
pub mod run;
pub mod source;
pub mod ranking;
