-- wrk script: POST the seed workload to the resolver.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"operation":"gqa_paged_decode_h32_kv4_d128_ps1","axes":{"batch_size":16,"num_pages":1070,"len_indptr":17,"num_kv_indices":1020},"hardware":"NVIDIA B200"}'
