package kubernetes

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// syncTimeout bounds the informer's first list at Open.
const syncTimeout = time.Minute

// podWatch is one informer on the sandboxes' Pods: every status
// and every wait reads its cache, and a wait wakes on the changes of its
// Pod, so nothing polls the API server per sandbox.
type podWatch struct {
	lister corelisters.PodNamespaceLister
	done   chan struct{}

	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{} // by Pod name
}

// watchPods starts the informer on the Pods of namespace that selector
// matches and waits for its first list.
func watchPods(ctx context.Context, cs corev1client.CoreV1Interface, namespace, selector string) (*podWatch, error) {
	pods := cs.Pods(namespace)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return pods.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	// The cache keeps what a status and a wait read, not each field's
	// writers: a Pod's managedFields are about a third of it.
	if err := inf.SetTransform(func(obj any) (any, error) {
		if m, ok := obj.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
		return obj, nil
	}); err != nil {
		return nil, err
	}
	w := &podWatch{lister: corelisters.NewPodLister(inf.GetIndexer()).Pods(namespace), done: make(chan struct{}), waiters: map[string]map[chan struct{}]struct{}{}}
	changed := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if p, ok := obj.(*corev1.Pod); ok {
			w.changed(p.Name)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, obj any) { changed(obj) },
		DeleteFunc: changed,
	}); err != nil {
		return nil, err
	}
	go inf.Run(w.done)
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		w.stop()
		return nil, fmt.Errorf("list the Pods of namespace %s within %v: %w", namespace, syncTimeout, context.Cause(ctx))
	}
	return w, nil
}

func (w *podWatch) stop() { close(w.done) }

// get is the Pod named name as the cache has it; nil when there is none.
func (w *podWatch) get(name string) *corev1.Pod {
	p, err := w.lister.Get(name)
	if err != nil {
		return nil
	}
	return p
}

// list is every Pod the cache has.
func (w *podWatch) list() ([]*corev1.Pod, error) {
	return w.lister.List(everything)
}

// changed wakes the waits on Pod name.
func (w *podWatch) changed(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.waiters[name] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// wait calls done with Pod name (nil when there is none) now and at each
// change of it, until done says it is done or fails, or ctx ends.
func (w *podWatch) wait(ctx context.Context, name string, done func(*corev1.Pod) (bool, error)) error {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.waiters[name] == nil {
		w.waiters[name] = map[chan struct{}]struct{}{}
	}
	w.waiters[name][ch] = struct{}{}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.waiters[name], ch)
		if len(w.waiters[name]) == 0 {
			delete(w.waiters, name)
		}
		w.mu.Unlock()
	}()
	for {
		ok, err := done(w.get(name))
		if ok || err != nil {
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// ignoreNotFound is nil for an API error that says the object is gone.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
