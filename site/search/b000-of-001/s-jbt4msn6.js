__polyglavSearch.add("b000-of-001","s","s-jbt4msn6",["002410","d-pufehcys d-hzxekbaz d-e2s4urt5"]);
