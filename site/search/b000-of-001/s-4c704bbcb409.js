__polyglavSearch.add("b000-of-001","s","s-4c704bbcb409","00230B");
