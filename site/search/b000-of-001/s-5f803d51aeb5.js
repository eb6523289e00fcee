__polyglavSearch.add("b000-of-001","s","s-5f803d51aeb5","00230B");
