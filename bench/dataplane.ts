console.log("## Dataplane: not yet measured\n");
