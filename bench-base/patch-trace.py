T='((performance.timeOrigin+performance.now())-Number(process.env.T0)).toFixed(1)'
def patch(p, pairs):
    s=open(p).read()
    for a,b in pairs:
        assert a in s, (p,a)
        s=s.replace(a,b,1)
    open(p,'w').write(s)
patch('dist/host/pool.js',[('        const watchdog = new SharedArrayBuffer(WATCHDOG_BYTES);','        process._rawDebug("ctor "+'+T+');\n        const watchdog = new SharedArrayBuffer(WATCHDOG_BYTES);'),
 ('        this.worker = new Worker(','        process._rawDebug("compiled "+'+T+');\n        this.worker = new Worker(')])
patch('dist/host/worker/entry.js',[('const init = workerData;','process._rawDebug("entry "+'+T+');\nconst init = workerData;')])
patch('dist/host/worker/worker-host.js',[('    handle(id, request) {\n','    handle(id, request) {\n        process._rawDebug("msg "+request.op+" "+'+T+');\n'),
 ('            this.post({ type: "reply", id, ok: true, value });','            this.post({ type: "reply", id, ok: true, value }); process._rawDebug("replied "+request.op+" "+'+T+');')])
